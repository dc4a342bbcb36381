package io.sandboxd.systemd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs the real systemd tools and install.sh as child processes and captures their output. */
final class SystemTools {
  /** Where the unit, the sysusers/tmpfiles entries and install.sh live in this module. */
  static final Path DIST = Path.of("src/main/dist").toAbsolutePath();

  private SystemTools() {}

  /** A finished process: exit status and stdout+stderr together. */
  record Result(int exit, String output) {}

  /** The tool on $PATH; fails (never skips) when it is missing, since .ci/run installs it. */
  static String tool(String name) {
    for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
      Path p = Path.of(dir.isEmpty() ? "." : dir, name);
      if (Files.isExecutable(p)) {
        return p.toString();
      }
    }
    return fail(name + " is not on PATH: install systemd (apt-get install -y systemd)");
  }

  /** systemd-sysusers with this module's sysusers entry on the staged {@code root}: it succeeds. */
  static void sysusers(Path root) throws IOException, InterruptedException {
    Result r = run(Map.of(), tool("systemd-sysusers"), "--root=" + root, entry("sysusers.d"));
    assertEquals(0, r.exit(), r.output());
  }

  /** systemd-tmpfiles --create with this module's tmpfiles entry on {@code root}: it succeeds. */
  static void tmpfiles(Path root) throws IOException, InterruptedException {
    Result r =
        run(Map.of(), tool("systemd-tmpfiles"), "--root=" + root, "--create", entry("tmpfiles.d"));
    assertEquals(0, r.exit(), r.output());
  }

  /** The sandboxd line of a staged passwd or group file, split at its colons. */
  static String[] sandboxdEntry(Path file) throws IOException {
    return Files.readString(file)
        .lines()
        .filter(l -> l.startsWith("sandboxd:"))
        .findFirst()
        .orElseThrow()
        .split(":");
  }

  private static String entry(String directory) {
    return DIST.resolve(directory + "/sandboxd.conf").toString();
  }

  static Result run(Map<String, String> env, String... command)
      throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(List.of(command)));
    pb.environment().putAll(env);
    pb.redirectErrorStream(true);
    pb.redirectInput(ProcessBuilder.Redirect.PIPE);
    Process p = pb.start();
    p.getOutputStream().close();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(String.join(" ", command) + ": did not finish in 60 s");
    }
    return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
  }

  /** Runs install.sh with DESTDIR={@code root} and a stand-in jar; asserts it succeeded. */
  static void stage(Path root, Path jar) throws IOException, InterruptedException {
    Result r =
        run(
            Map.of("DESTDIR", root.toString()),
            "bash",
            DIST.resolve("install.sh").toString(),
            jar.toString());
    assertTrue(r.exit() == 0, "install.sh failed (" + r.exit() + "):\n" + r.output());
  }
}
