package io.sandboxd.daemon.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonPaths;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** --help on every (sub)command; a client that cannot reach the daemon says why. */
class CliHelpAndReachTest {
  @TempDir Path tmp;

  /** Every command path below sandboxctl, found through picocli's spec (nothing hard-coded). */
  private static List<List<String>> commandPaths(CommandLine cl, List<String> prefix) {
    List<List<String>> out = new ArrayList<>();
    out.add(prefix);
    cl.getSubcommands()
        .forEach(
            (name, sub) -> {
              if (name.equals(sub.getCommandName())) { // skip aliases
                List<String> p = new ArrayList<>(prefix);
                p.add(name);
                out.addAll(commandPaths(sub, p));
              }
            });
    return out;
  }

  @TestFactory
  Stream<DynamicTest> helpWorksOnEveryCommand() {
    List<List<String>> paths = commandPaths(Sandboxctl.commandLine(), List.of());
    assertTrue(paths.size() > 12, "subcommands found: " + paths);
    return paths.stream()
        .map(
            path ->
                DynamicTest.dynamicTest(
                    String.join(" ", path) + " --help",
                    () -> {
                      List<String> args = new ArrayList<>(path);
                      args.add("--help");
                      Console.Result r = Console.run(args.toArray(String[]::new));
                      assertEquals(0, r.exit(), r.stderr());
                      String name = path.isEmpty() ? "sandboxctl" : path.get(path.size() - 1);
                      assertTrue(r.out().startsWith("Usage: "), r.out());
                      assertTrue(r.out().contains(name), r.out());
                      assertTrue(r.out().contains("--help"), r.out());
                      assertEquals("", r.stderr());
                    }));
  }

  /** A group run alone prints its usage under its full name, as `--help` does, on stderr. */
  @TestFactory
  Stream<DynamicTest> aGroupRunAlonePrintsItsFullUsage() {
    CommandLine root = Sandboxctl.commandLine();
    List<List<String>> groups = new ArrayList<>();
    for (List<String> path : commandPaths(root, List.of())) {
      CommandLine cl = root;
      for (String name : path) {
        cl = cl.getSubcommands().get(name);
      }
      if (!path.isEmpty() && !cl.getSubcommands().isEmpty()) {
        groups.add(path);
      }
    }
    assertTrue(groups.size() >= 8, "groups found: " + groups);
    return groups.stream()
        .map(
            path ->
                DynamicTest.dynamicTest(
                    String.join(" ", path),
                    () -> {
                      Console.Result r = Console.run(path.toArray(String[]::new));
                      assertEquals(0, r.exit(), r.stderr());
                      assertTrue(
                          r.stderr().startsWith("Usage: sandboxctl " + String.join(" ", path)),
                          r.stderr());
                      assertTrue(r.stderr().contains("--help"), r.stderr());
                      assertEquals("", r.out());
                    }));
  }

  @Test
  void helpWinsOverAMissingRequiredParameter() {
    Console.Result r = Console.run("run", "-h");
    assertEquals(0, r.exit(), r.stderr());
    assertTrue(r.out().contains("--grants"), r.out());
    // without --help the missing parameters are still a usage error
    assertEquals(Sandboxctl.UNUSABLE, Console.run("run").exit());
  }

  private void assertNoDaemon(Path socket) {
    for (String[] args :
        List.of(
            new String[] {"runs", "list", "--socket", socket.toString()},
            new String[] {"runs", "show", "r1", "--socket", socket.toString()},
            new String[] {"replay", "r1", "--socket", socket.toString()})) {
      Console.Result r = Console.run(args);
      assertEquals(Sandboxctl.UNUSABLE, r.exit(), r.stderr());
      assertTrue(
          r.stderr().contains("no daemon at " + socket + ": is sandboxd running?"), r.stderr());
      assertFalse(r.stderr().contains("null"), r.stderr());
      assertEquals("", r.out());
    }
  }

  @Test
  void aMissingSocketSaysNoDaemon() {
    assertNoDaemon(tmp.resolve("none.sock"));
  }

  @Test
  void eachDaemonCommandNamesItselfWhenItCannotAsk() throws IOException {
    String socket = tmp.resolve("none.sock").toString();
    String absent = tmp.resolve("absent").toString();
    // Read before the call: the commands that read their files first get that far.
    String agg = Files.writeString(tmp.resolve("agg.json"), "{}").toString();
    // The command's words, then its arguments: a failed call names the words, nothing else.
    for (String[] command :
        new String[][] {
          {"envs"},
          {"status"},
          {"pools"},
          {"store verify"},
          {"modules list"},
          {"modules put", absent},
          {"run", absent, "--grants", absent},
          {"runs output", "r1"},
          {"runs suspend", "r1"},
          {"runs resume", "r1"},
          {"runs wait", "r1"},
          {"runs log", "r1"},
          {"runs import", absent},
          {"runs reclaim", "r1"},
          {"runs export", "r1", "--bundle", tmp.resolve("bundle").toString()},
          {"runs export", "r1", "--intoto", "-"},
          {"log checkpoint"},
          {"log prove", "ab"},
          {"log consistency", "1", "2"},
          {"fleet aggregate"},
          {"fleet prove", "r1", "--aggregate", agg},
          {"fleet consistency", agg, agg},
          {"jcp keys"},
          {"jcp policy add", absent, "--parent", absent},
          {"jcp event", "ab", absent},
          {"jcp release", "ab"},
          {"jcp checkpoint", "r1"},
          {"jcp amend", "r1", absent},
          {"report", "--out", tmp.resolve("report").toString()}
        }) {
      List<String> argv = new ArrayList<>(List.of(command[0].split(" ")));
      argv.addAll(List.of(command).subList(1, command.length));
      argv.addAll(List.of("--socket", socket));
      Console.Result r = Console.run(argv.toArray(String[]::new));
      assertEquals(Sandboxctl.UNUSABLE, r.exit(), argv + ": " + r.stderr());
      assertTrue(
          r.stderr().startsWith("sandboxctl " + command[0] + ": "), argv + ": " + r.stderr());
      assertEquals("", r.out(), argv.toString());
    }
  }

  @Test
  void negativeNumbersAreRefusedBeforeTheDaemonIsAsked() {
    String socket = tmp.resolve("none.sock").toString();
    // The line each prints, then its argv: refused before any connection, so no "no daemon at".
    for (String[] c :
        new String[][] {
          {"sandboxctl pools: --evictions: must not be negative", "pools", "--evictions=-1"},
          {
            "sandboxctl log consistency: sizes must not be negative",
            "log",
            "consistency",
            "1",
            "-2"
          },
          {
            "sandboxctl fleet aggregate: --since/--until must not be negative",
            "fleet",
            "aggregate",
            "--until=-1"
          }
        }) {
      List<String> argv = new ArrayList<>(List.of(c).subList(1, c.length));
      argv.addAll(List.of("--socket", socket));
      Console.Result r = Console.run(argv.toArray(String[]::new));
      assertEquals(Sandboxctl.UNUSABLE, r.exit(), argv + ": " + r.stderr());
      assertEquals(c[0] + System.lineSeparator(), r.stderr(), argv.toString());
      assertEquals("", r.out(), argv.toString());
    }
  }

  @Test
  void aStaleSocketSaysNoDaemon() throws IOException {
    Path sock = tmp.resolve("stale.sock");
    try (ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      s.bind(UnixDomainSocketAddress.of(sock));
    }
    assertTrue(Files.exists(sock), "the socket file stays after its server closed");
    assertNoDaemon(sock);
  }

  @Test
  void aDeniedSocketSaysJoinTheGroup() {
    // what gRPC reports when connect(2) gets EACCES (root never does, so it is built here)
    StatusRuntimeException denied =
        Status.UNAVAILABLE
            .withDescription("io exception")
            .withCause(new IOException("connect(..) failed: Permission denied"))
            .asRuntimeException();
    assertEquals(
        "permission denied on /run/sandboxd/sandboxd.sock: join group sandboxd"
            + " (sudo usermod -aG sandboxd $USER, then log in again)",
        RpcErrors.describe(denied, DaemonPaths.SYSTEM_SOCKET));
    assertTrue(
        RpcErrors.describe(denied, tmp.resolve("d.sock"))
            .startsWith("permission denied on " + tmp.resolve("d.sock")));
  }

  @Test
  void failuresWithoutMessagesNeverPrintNull() {
    Path sock = tmp.resolve("x.sock");
    String unknown =
        RpcErrors.describe(
            Status.UNAVAILABLE
                .withDescription("io exception")
                .withCause(new IOException(new IllegalStateException("boom")))
                .asRuntimeException(),
            sock);
    assertFalse(unknown.contains("null"), unknown);
    assertTrue(unknown.contains("boom"), unknown);
    String internal = RpcErrors.describe(Status.INTERNAL.asRuntimeException(), sock);
    assertEquals("INTERNAL: ", internal);
    // the daemon's own UNAVAILABLE (with its words) is passed through, not taken for "no daemon"
    assertEquals(
        "UNAVAILABLE: draining",
        RpcErrors.describe(
            Status.UNAVAILABLE.withDescription("draining").asRuntimeException(), sock));
  }
}
