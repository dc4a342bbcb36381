package io.sandboxd.systemd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 21: the shell scripts the tests and the package call are linted by the real shellcheck, and
 * {@code bin/systemd-image} finds apt's mirror on every source layout Debian machines have.
 */
class HelperScriptsTest {
  /** The repository root: this module's tests run in {@code systemd/}. */
  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

  private static final Path IMAGE = ROOT.resolve("bin/systemd-image");

  @TempDir Path tmp;

  /** Every shell script of the project: bin/, .ci/run, the packaged launchers, the benchmarks. */
  static List<Path> scripts() throws IOException {
    List<Path> all = new ArrayList<>();
    for (Path dir :
        List.of(
            ROOT.resolve("bin"),
            ROOT.resolve(".ci"),
            ROOT.resolve("systemd/src/main/dist"),
            ROOT.resolve("systemd/src/main/dist/bin"),
            ROOT.resolve("benchmarks"))) {
      try (Stream<Path> files = Files.list(dir)) {
        files.filter(Files::isRegularFile).filter(HelperScriptsTest::isShell).forEach(all::add);
      }
    }
    return all;
  }

  private static boolean isShell(Path p) {
    try {
      String head = new String(Files.readAllBytes(p), StandardCharsets.UTF_8);
      return head.startsWith("#!/bin/sh") || head.startsWith("#!/usr/bin/env bash");
    } catch (IOException e) {
      throw new AssertionError(p + ": " + e);
    }
  }

  @Test
  void everyScriptPassesShellcheck() throws Exception {
    List<Path> scripts = scripts();
    // The scripts the tests call must be among them, or the lint would pass by finding nothing.
    for (String name :
        List.of(
            "bin/test",
            "bin/systemd-image",
            "bin/sqlite-wasm",
            "bin/sandboxd",
            ".ci/run",
            "systemd/src/main/dist/bin/sandboxd",
            "systemd/src/main/dist/bin/build-start-cache",
            "benchmarks/run-startup.sh")) {
      assertTrue(scripts.contains(ROOT.resolve(name)), name + " not linted: " + scripts);
    }
    List<String> command = new ArrayList<>(List.of(SystemTools.tool("shellcheck"), "-x"));
    scripts.forEach(p -> command.add(p.toString()));
    SystemTools.Result r = SystemTools.run(Map.of(), command.toArray(String[]::new));
    assertEquals(0, r.exit(), "shellcheck found problems:\n" + r.output());
  }

  private Path aptEtc(String name, String sourcesList, String deb822) throws IOException {
    Path etc = tmp.resolve(name);
    Files.createDirectories(etc.resolve("sources.list.d"));
    if (sourcesList != null) {
      Files.writeString(etc.resolve("sources.list"), sourcesList);
    }
    if (deb822 != null) {
      Files.writeString(etc.resolve("sources.list.d/debian.sources"), deb822);
    }
    return etc;
  }

  private String mirror(Path etc) throws Exception {
    SystemTools.Result r =
        SystemTools.run(Map.of("SANDBOXD_APT_ETC", etc.toString()), IMAGE.toString(), "--mirror");
    assertEquals(0, r.exit(), "systemd-image --mirror on " + etc + ":\n" + r.output());
    return r.output().strip();
  }

  private static final String DEB822 =
      "Types: deb\n"
          + "# http://snapshot.debian.org/archive/debian/20250520T000000Z\n"
          + "URIs: http://mirror.deb822.example/debian\n"
          + "Suites: bookworm bookworm-updates\n\n"
          + "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n";

  private static final String ONE_LINE =
      "# deb http://commented.example/debian bookworm main\n"
          + "deb [arch=amd64 trusted=yes signed-by=/k.gpg] http://mirror.list.example/debian/"
          + " bookworm main\n";

  @Test
  void mirrorFromDeb822SourcesAloneWithNoSourcesList() throws Exception {
    // The layout of current Debian images, which made the script exit 2 without a word.
    Path etc = aptEtc("deb822", null, DEB822);
    assertTrue(Files.notExists(etc.resolve("sources.list")));
    assertEquals("http://mirror.deb822.example/debian", mirror(etc));
  }

  @Test
  void mirrorFromOneLineSourcesAlone() throws Exception {
    assertEquals("http://mirror.list.example/debian/", mirror(aptEtc("one-line", ONE_LINE, null)));
  }

  @Test
  void mirrorWithBothLayoutsPrefersSourcesList() throws Exception {
    assertEquals("http://mirror.list.example/debian/", mirror(aptEtc("both", ONE_LINE, DEB822)));
  }

  @Test
  void mirrorFallsBackToDebianWhenAptNamesNone() throws Exception {
    assertEquals("http://deb.debian.org/debian", mirror(aptEtc("none", null, null)));
    assertEquals(
        "http://deb.debian.org/debian",
        mirror(
            aptEtc("security-only", null, "Types: deb\nURIs: http://x.example/debian-security\n")));
    Path missing = tmp.resolve("no-such-etc");
    assertEquals("http://deb.debian.org/debian", mirror(missing));
  }

  @Test
  void aScriptThatCannotDoItsJobSaysWhy() throws Exception {
    SystemTools.Result r = SystemTools.run(Map.of(), IMAGE.toString(), "--bogus");
    assertEquals(2, r.exit(), r.output());
    assertTrue(r.output().contains("unknown argument '--bogus'"), r.output());
  }
}
