package io.sandboxd.systemd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InstallScriptTest {
  @TempDir Path tmp;

  private Path fakeJar() throws IOException {
    Path jar = tmp.resolve("built/sandboxd.jar");
    Files.createDirectories(jar.getParent());
    Files.write(jar, "PK stand-in jar".getBytes(StandardCharsets.US_ASCII));
    return jar;
  }

  @Test
  void destdirStagesExactlyTheExpectedTree() throws Exception {
    Path root = tmp.resolve("root");
    Path jar = fakeJar();
    SystemTools.stage(root, jar);

    Set<String> files = new TreeSet<>();
    try (Stream<Path> walk = Files.walk(root)) {
      walk.filter(p -> !Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS))
          .forEach(p -> files.add(root.relativize(p).toString()));
    }
    assertEquals(
        new TreeSet<>(
            List.of(
                "usr/bin/sandboxctl",
                "usr/lib/sandboxd/sandboxd.jar",
                "usr/lib/sandboxd/bin/sandboxd",
                "usr/lib/sandboxd/bin/sandboxctl",
                "usr/lib/sandboxd/bin/build-start-cache",
                "usr/lib/systemd/system/sandboxd.service",
                "usr/lib/sysusers.d/sandboxd.conf",
                "usr/lib/tmpfiles.d/sandboxd.conf",
                "usr/lib/udev/rules.d/60-sandboxd-meters.rules")),
        files);

    assertArrayEquals(
        Files.readAllBytes(jar), Files.readAllBytes(root.resolve("usr/lib/sandboxd/sandboxd.jar")));
    for (String f :
        List.of(
            "usr/lib/systemd/system/sandboxd.service",
            "usr/lib/sysusers.d/sandboxd.conf",
            "usr/lib/tmpfiles.d/sandboxd.conf",
            "usr/lib/udev/rules.d/60-sandboxd-meters.rules")) {
      assertEquals("rw-r--r--", mode(root.resolve(f)), f);
    }
    assertEquals(
        Files.readString(SystemTools.DIST.resolve("sandboxd.service")),
        Files.readString(root.resolve("usr/lib/systemd/system/sandboxd.service")));

    Path launcher = root.resolve("usr/lib/sandboxd/bin/sandboxd");
    assertEquals("rwxr-xr-x", mode(launcher));
    String text = Files.readString(launcher);
    // exec keeps the JVM as the unit's main PID, which NotifyAccess=main requires.
    assertTrue(text.contains("exec "), text);
    assertTrue(text.contains("lib=\"${SANDBOXD_LIB:-/usr/lib/sandboxd}\""), text);
    assertTrue(text.contains("-cp \"$jar\""), text);
    assertTrue(text.contains("io.sandboxd.daemon.SandboxdMain"), text);

    // A staged tree has no start-up cache: it is built on the target's JVM (postinst, install.sh).
    assertEquals("rwxr-xr-x", mode(root.resolve("usr/lib/sandboxd/bin/build-start-cache")));
    assertFalse(Files.exists(root.resolve("var/cache/sandboxd")));

    Path ctl = root.resolve("usr/bin/sandboxctl");
    assertTrue(Files.isSymbolicLink(ctl));
    assertEquals(
        root.resolve("usr/lib/sandboxd/bin/sandboxctl").toRealPath(), ctl.toRealPath(), "link");
  }

  @Test
  void stagedLauncherExecsJavaWithTheInstalledJar() throws Exception {
    Path root = tmp.resolve("root");
    SystemTools.stage(root, fakeJar());
    // A stand-in "java" that prints its arguments shows what the launcher would exec.
    Path fakeJava = tmp.resolve("fake-java");
    Files.writeString(fakeJava, "#!/bin/sh\necho \"$@\"\n");
    Files.setPosixFilePermissions(fakeJava, PosixFilePermissions.fromString("rwx------"));
    SystemTools.Result r =
        SystemTools.run(
            // A cache that is not there: the plain command line (the next test covers the cache).
            Map.of(
                "SANDBOXD_JAVA",
                fakeJava.toString(),
                "SANDBOXD_CACHE",
                tmp.resolve("no-cache").toString()),
            root.resolve("usr/lib/sandboxd/bin/sandboxd").toString(),
            "serve",
            "--dev");
    assertEquals(0, r.exit(), r.output());
    assertEquals(
        "-cp /usr/lib/sandboxd/sandboxd.jar io.sandboxd.daemon.SandboxdMain serve --dev\n",
        r.output());
  }

  @Test
  void stagedClientRunsOnTheJitsFirstTierUnlessToldOtherwise() throws Exception {
    Path root = tmp.resolve("root");
    SystemTools.stage(root, fakeJar());
    String ctl = root.resolve("usr/lib/sandboxd/bin/sandboxctl").toString();
    String tail =
        "-cp /usr/lib/sandboxd/sandboxd.jar io.sandboxd.daemon.cli.Sandboxctl runs list\n";
    SystemTools.Result plain =
        SystemTools.run(Map.of("SANDBOXD_JAVA", fakeJava().toString()), ctl, "runs", "list");
    assertEquals(0, plain.exit(), plain.output());
    assertEquals("-XX:TieredStopAtLevel=1 -Xshare:auto " + tail, plain.output());
    SystemTools.Result none =
        SystemTools.run(
            Map.of("SANDBOXD_JAVA", fakeJava().toString(), "SANDBOXCTL_JAVA_OPTS", ""),
            ctl,
            "runs",
            "list");
    assertEquals(tail, none.output());
    SystemTools.Result both =
        SystemTools.run(
            Map.of(
                "SANDBOXD_JAVA",
                fakeJava().toString(),
                "SANDBOXCTL_JAVA_OPTS",
                "-Xmx64m  -Xss1m",
                "SANDBOXD_JAVA_OPTS",
                "-Da=*"),
            ctl,
            "runs",
            "list");
    // Split into words, never globbed: the star stays a star.
    assertEquals("-Xmx64m -Xss1m -Da=* " + tail, both.output());
  }

  /** What the staged launcher would exec (and said), with {@code cache} as its start-up cache. */
  private String launched(Path root, Path cache) throws Exception {
    return launched(root, cache.toString());
  }

  /** As above, with SANDBOXD_CACHE set to {@code cache} as it is (empty: no cache). */
  private String launched(Path root, String cache) throws Exception {
    SystemTools.Result r =
        SystemTools.run(
            stagedEnv(root, cache),
            root.resolve("usr/lib/sandboxd/bin/sandboxd").toString(),
            "serve");
    assertEquals(0, r.exit(), r.output());
    return r.output();
  }

  /** The staged tree under {@code root}, the stand-in java, and {@code cache} as the cache. */
  private Map<String, String> stagedEnv(Path root, String cache) throws IOException {
    return Map.of(
        "SANDBOXD_JAVA",
        fakeJava().toString(),
        "SANDBOXD_LIB",
        root.resolve("usr/lib/sandboxd").toString(),
        "SANDBOXD_CACHE",
        cache);
  }

  /** A stand-in "java" that prints its arguments: it shows what the launcher would exec. */
  private Path fakeJava() throws IOException {
    Path fakeJava = tmp.resolve("fake-java");
    if (!Files.exists(fakeJava)) {
      Files.writeString(fakeJava, "#!/bin/sh\necho \"$@\"\n");
      Files.setPosixFilePermissions(fakeJava, PosixFilePermissions.fromString("rwx------"));
    }
    return fakeJava;
  }

  /** made-from's line for these files: path, size and mtime of each, as stat prints them. */
  private static String stamp(Path... files) throws IOException {
    StringBuilder s = new StringBuilder();
    for (Path f : files) {
      s.append(f)
          .append(' ')
          .append(Files.size(f))
          .append(' ')
          .append(Files.getLastModifiedTime(f).toInstant().getEpochSecond())
          .append(';');
    }
    return s.append('\n').toString();
  }

  @Test
  void launcherPassesTheClassArchiveOnlyWhenItWasMadeFromThisJarAndJvm() throws Exception {
    Path root = tmp.resolve("root");
    SystemTools.stage(root, fakeJar());
    Path jar = root.resolve("usr/lib/sandboxd/sandboxd.jar");
    Path java = fakeJava().toRealPath();
    Path cache = tmp.resolve("cache");
    String plain = "-cp " + jar + " io.sandboxd.daemon.SandboxdMain serve\n";
    String stale = "was made for another jar or JVM; starting without it";
    // No cache at all: a plain start, without a word.
    assertEquals(plain, launched(root, cache));
    Files.createDirectories(cache);
    Files.write(cache.resolve("sandboxd.jsa"), new byte[] {1, 2, 3});
    // An archive without its made-from stamp is not trusted to match.
    assertEquals(plain, launched(root, cache));
    Files.writeString(cache.resolve("made-from"), stamp(jar, java));
    assertEquals(
        "-XX:SharedArchiveFile=" + cache.resolve("sandboxd.jsa") + " -Xshare:auto " + plain,
        launched(root, cache));
    // The jar reinstalled (another mtime): the archive of the old one is not passed, and the
    // journal hears why.
    Files.setLastModifiedTime(
        jar, FileTime.from(Files.getLastModifiedTime(jar).toInstant().minusSeconds(3600)));
    String after = launched(root, cache);
    assertTrue(after.endsWith(plain) && after.contains(stale), after);
    // Made for this jar, but under another JVM (a JDK upgrade): not passed either.
    Files.writeString(cache.resolve("made-from"), stamp(jar, fakeJar()));
    after = launched(root, cache);
    assertTrue(after.endsWith(plain) && after.contains(stale), after);
    Files.writeString(cache.resolve("made-from"), stamp(jar, java));
    assertTrue(launched(root, cache).startsWith("-XX:SharedArchiveFile="));
    // With the SQLite driver's native library copied there too, the driver is pointed at it.
    Files.write(cache.resolve("libsqlitejdbc.so"), new byte[] {4});
    assertEquals(
        "-XX:SharedArchiveFile="
            + cache.resolve("sandboxd.jsa")
            + " -Xshare:auto -Dorg.sqlite.lib.path="
            + cache
            + " -Dorg.sqlite.lib.name=libsqlitejdbc.so "
            + plain,
        launched(root, cache));
    // An AOT cache (build-start-cache on JDK 25 and later) is passed instead of an archive beside
    // it, under the same made-from.
    Files.write(cache.resolve("sandboxd.aot"), new byte[] {5});
    assertEquals(
        "-XX:AOTCache="
            + cache.resolve("sandboxd.aot")
            + " -Dorg.sqlite.lib.path="
            + cache
            + " -Dorg.sqlite.lib.name=libsqlitejdbc.so "
            + plain,
        launched(root, cache));
    Files.delete(cache.resolve("sandboxd.jsa"));
    assertTrue(launched(root, cache).startsWith("-XX:AOTCache="));
    Files.writeString(cache.resolve("made-from"), stamp(jar, fakeJar()));
    assertTrue(launched(root, cache).endsWith(plain), "an AOT cache of another JVM");
    Files.writeString(cache.resolve("made-from"), stamp(jar, java));
    // SANDBOXD_CACHE set but empty (bin/sandboxd with SANDBOXD_START_CACHE=off): none, silently.
    assertEquals(plain, launched(root, ""));
    // ...but only from a cache made for this jar.
    Files.setLastModifiedTime(
        jar, FileTime.from(Files.getLastModifiedTime(jar).toInstant().plusSeconds(60)));
    assertTrue(launched(root, cache).endsWith(plain));
  }

  @Test
  void buildStartCacheIfStaleTrainsOnlyWhenTheCacheDoesNotFit() throws Exception {
    Path root = tmp.resolve("root");
    SystemTools.stage(root, fakeJar());
    Path jar = root.resolve("usr/lib/sandboxd/sandboxd.jar");
    Path cache = tmp.resolve("cache");
    Map<String, String> env = stagedEnv(root, cache.toString());
    String script = root.resolve("usr/lib/sandboxd/bin/build-start-cache").toString();
    // The stand-in java trains nothing, so a training here ends in "wrote no archive" (exit 1).
    String training = "build-start-cache: training " + cache;
    SystemTools.Result none = SystemTools.run(env, script, "--if-stale");
    assertEquals(1, none.exit(), none.output());
    assertTrue(none.output().contains(training), none.output());
    assertTrue(none.output().contains("the JVM wrote no archive"), none.output());
    Files.createDirectories(cache);
    Files.write(cache.resolve("sandboxd.jsa"), new byte[] {1, 2, 3});
    Files.writeString(cache.resolve("made-from"), stamp(jar, fakeJava().toRealPath()));
    // It fits: nothing to do, nothing said, and the cache untouched.
    SystemTools.Result fits = SystemTools.run(env, script, "--if-stale");
    assertEquals(0, fits.exit(), fits.output());
    assertEquals("", fits.output());
    assertEquals(3, Files.size(cache.resolve("sandboxd.jsa")));
    // Without --if-stale it trains all the same (install.sh, a postinst).
    SystemTools.Result always = SystemTools.run(env, script);
    assertEquals(1, always.exit(), always.output());
    assertTrue(always.output().contains(training), always.output());
    // The jar rebuilt (another mtime): stale, so it trains.
    Files.setLastModifiedTime(
        jar, FileTime.from(Files.getLastModifiedTime(jar).toInstant().plusSeconds(60)));
    SystemTools.Result stale = SystemTools.run(env, script, "--if-stale");
    assertEquals(1, stale.exit(), stale.output());
    assertTrue(stale.output().contains(training), stale.output());
    SystemTools.Result bad = SystemTools.run(env, script, "--now");
    assertEquals(2, bad.exit(), bad.output());
    assertTrue(bad.output().contains("unknown argument --now"), bad.output());
  }

  /**
   * A stand-in JDK 25 (its release file says so): its java writes the primer's unit, serves (or
   * exits at once when STANDIN_SERVE=exit) until SIGTERM and then writes the AOT cache it was told
   * to (unless STANDIN_CACHE=none), and answers each bench with 7 runs.
   */
  private Path fakeJdk25() throws IOException {
    Path home = tmp.resolve("fake-jdk-25");
    Path java = home.resolve("bin/java");
    if (!Files.exists(java)) {
      Files.createDirectories(home.resolve("lib/server"));
      Files.createDirectories(java.getParent());
      Files.writeString(home.resolve("lib/server/libjvm.so"), "");
      Files.writeString(home.resolve("release"), "JAVA_VERSION=\"25.0.1\"\n");
      Files.writeString(
          java,
          String.join(
              "\n",
              "#!/bin/sh",
              "out=; mode=",
              "for a; do",
              "  case \"$a\" in",
              "    -XX:AOTCacheOutput=*) out=\"${a#-XX:AOTCacheOutput=}\" ;;",
              "    io.sandboxd.daemon.run.RunPathPrimer) mode=primer ;;",
              "    io.sandboxd.daemon.SandboxdMain) mode=serve ;;",
              "    io.sandboxd.daemon.cli.Sandboxctl) mode=bench ;;",
              "  esac",
              "  last=\"$a\"",
              "done",
              "case \"$mode\" in",
              "  primer) mkdir -p \"$last\" && : >\"$last/prime.wasm\" ;;",
              "  bench) echo '{\"units_per_s\":1.0,\"runs\":7,\"errors\":0}' ;;",
              "  serve)",
              "    [ \"${STANDIN_SERVE:-}\" = exit ] && { echo 'no state directory'; exit 3; }",
              "    trap '[ \"${STANDIN_CACHE:-}\" = none ] || echo aot >\"$out\"; exit 0' TERM",
              "    echo 'sandboxd serving on the socket'",
              "    while :; do sleep 0.05; done ;;",
              "esac",
              ""));
      Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwx------"));
    }
    return java;
  }

  @Test
  void onJdk25BuildStartCacheTrainsAnAotCacheUnderLoadAndNamesEachFailure() throws Exception {
    Path root = tmp.resolve("root");
    SystemTools.stage(root, fakeJar());
    Path cache = tmp.resolve("cache");
    Path scratch = Files.createDirectories(tmp.resolve("scratch"));
    String script = root.resolve("usr/lib/sandboxd/bin/build-start-cache").toString();
    java.util.function.Function<Map<String, String>, Map<String, String>> env =
        extra -> {
          Map<String, String> e = new java.util.HashMap<>(extra);
          e.put("SANDBOXD_LIB", root.resolve("usr/lib/sandboxd").toString());
          e.put("SANDBOXD_CACHE", cache.toString());
          e.put("TMPDIR", scratch.toString());
          try {
            e.put("SANDBOXD_JAVA", fakeJdk25().toString());
          } catch (IOException x) {
            throw new java.io.UncheckedIOException(x);
          }
          return e;
        };
    // The training daemon exits before it serves: said, with what it said, and nothing left.
    SystemTools.Result exited = SystemTools.run(env.apply(Map.of("STANDIN_SERVE", "exit")), script);
    assertEquals(1, exited.exit(), exited.output());
    assertTrue(exited.output().contains("(a daemon under load, about 20 s)"), exited.output());
    assertTrue(
        exited.output().contains("the training daemon exited; it said:\nno state directory"),
        exited.output());
    assertEquals(List.of(), listed(scratch), "scratch left behind");
    // It serves and stops, but no cache comes of it.
    SystemTools.Result none = SystemTools.run(env.apply(Map.of("STANDIN_CACHE", "none")), script);
    assertEquals(1, none.exit(), none.output());
    assertTrue(none.output().contains("the JVM wrote no archive (sandboxd.aot)"), none.output());
    assertEquals(List.of(), listed(scratch), "scratch left behind");
    // Trained: the cache, its stamp, the runs the two loads made, and an old archive gone.
    Files.createDirectories(cache);
    Files.write(cache.resolve("sandboxd.jsa"), new byte[] {1, 2, 3});
    SystemTools.Result built = SystemTools.run(env.apply(Map.of()), script);
    assertEquals(0, built.exit(), built.output());
    assertTrue(
        built
            .output()
            .contains(
                "for "
                    + root.resolve("usr/lib/sandboxd/sandboxd.jar")
                    + ", trained on 14 runs through its socket"),
        built.output());
    assertEquals("aot\n", Files.readString(cache.resolve("sandboxd.aot")));
    assertFalse(Files.exists(cache.resolve("sandboxd.jsa")), "the old archive shadows nothing");
    assertTrue(
        Files.readString(cache.resolve("made-from"))
            .contains(tmp.resolve("fake-jdk-25/lib/server/libjvm.so").toRealPath() + " "),
        Files.readString(cache.resolve("made-from")));
    assertEquals(List.of(), listed(scratch), "scratch left behind");
    // Fits now: --if-stale says nothing.
    SystemTools.Result fits = SystemTools.run(env.apply(Map.of()), script, "--if-stale");
    assertEquals(0, fits.exit(), fits.output());
    assertEquals("", fits.output());
  }

  private static List<Path> listed(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.toList();
    }
  }

  @Test
  void missingJarIsRefusedAndNothingIsStaged() throws Exception {
    Path root = tmp.resolve("root");
    SystemTools.Result r =
        SystemTools.run(
            Map.of("DESTDIR", root.toString()),
            "bash",
            SystemTools.DIST.resolve("install.sh").toString(),
            tmp.resolve("absent.jar").toString());
    assertEquals(2, r.exit(), r.output());
    assertTrue(r.output().contains("absent.jar"), r.output());
    assertFalse(Files.exists(root));
  }

  private static String mode(Path p) throws IOException {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
  }
}
