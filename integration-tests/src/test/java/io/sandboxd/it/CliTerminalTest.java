package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the packaged sandboxctl leaves on a user's terminal: its own words, no library logs. */
class CliTerminalTest {
  @TempDir static Path dir;
  static DaemonProcess daemon;

  @BeforeAll
  static void start() throws Exception {
    daemon = DaemonProcess.start(dir.resolve("state"), dir.resolve("run/sandboxd.sock"));
  }

  @AfterAll
  static void stop() throws Exception {
    if (daemon != null) {
      daemon.close();
    }
  }

  /** The packaged CLI in its own JVM, with extra JVM options and an optional command prefix. */
  private static DaemonProcess.Result cli(List<String> prefix, List<String> jvm, String... args)
      throws Exception {
    List<String> cmd = new ArrayList<>(prefix);
    List<String> java = DaemonProcess.java("io.sandboxd.daemon.cli.Sandboxctl", args);
    cmd.add(java.get(0));
    cmd.addAll(jvm);
    cmd.addAll(java.subList(1, java.size()));
    Process p =
        new ProcessBuilder(cmd)
            .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
            .start();
    byte[] out = p.getInputStream().readAllBytes();
    byte[] err = p.getErrorStream().readAllBytes();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "sandboxctl did not finish: " + cmd);
    return new DaemonProcess.Result(
        p.exitValue(),
        new String(out, StandardCharsets.UTF_8),
        new String(err, StandardCharsets.UTF_8));
  }

  @Test
  void nettyWarningsNeverReachTheTerminal() throws Exception {
    // A malformed machine id makes Netty warn when the client's first channel is made, on any
    // host (the MAC-address warning needs a host without a usable interface); either is silenced.
    DaemonProcess.Result r =
        cli(
            List.of(),
            List.of("-Dio.netty.machineId=not-a-mac"),
            "runs",
            "list",
            "--socket",
            daemon.socket.toString());
    assertEquals(0, r.exit(), r.err());
    assertTrue(r.out().startsWith("RUN "), r.out());
    assertEquals("", r.err(), "stderr of a successful sandboxctl runs list");
  }

  @Test
  void helpOfASubcommandWithRequiredParametersExitsZero() throws Exception {
    DaemonProcess.Result r = cli(List.of(), List.of(), "run", "--help");
    assertEquals(0, r.exit(), r.err());
    assertTrue(r.out().startsWith("Usage: sandboxctl run"), r.out());
    assertEquals("", r.err());
  }

  @Test
  void aSocketThisUserMayNotOpenSaysPermissionDenied() throws Exception {
    // root ignores file modes, so as root the client runs as nobody; otherwise the socket is closed
    // to its owner too
    boolean root = "root".equals(System.getProperty("user.name"));
    Path socket = daemon.socket;
    if (!root) {
      Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("---------"));
    }
    try {
      DaemonProcess.Result r =
          cli(
              root
                  ? List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
                  : List.of(),
              List.of("-Xshare:off"),
              "runs",
              "list",
              "--socket",
              socket.toString());
      assertEquals(2, r.exit(), r.err());
      assertTrue(r.err().contains("permission denied on " + socket), r.err());
      assertFalse(r.err().contains("null"), r.err());
      assertFalse(r.err().contains("WARNING"), r.err());
    } finally {
      if (!root) {
        Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-rw----"));
      }
    }
  }
}
