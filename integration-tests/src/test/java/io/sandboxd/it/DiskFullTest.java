package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetRunRequest;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A daemon whose state directory's file system fills up (a 4 MiB tmpfs of its own, mounted in a
 * mount namespace of its own): the runs it cannot keep are refused UNAVAILABLE as not stored, none
 * is acknowledged that is not kept, the log reports the failures at a pace instead of one stack
 * trace each, and once the file system has room again the same daemon stores runs again, without a
 * restart, and its whole store verifies.
 */
class DiskFullTest {
  @TempDir Path tmp;

  private static final int CLIENTS = 4;

  @Test
  void aFullStateFileSystemRefusesRunsUntilItHasRoomAndLosesNothing() throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    Path socket = tmp.resolve("d.sock");
    // unshare execs sh, which execs the JVM: the process started is the daemon itself.
    List<String> cmd =
        new ArrayList<>(
            List.of(
                "unshare",
                "-Urm",
                "--",
                "sh",
                "-c",
                "mount -t tmpfs -o size=4m,mode=0700 sandboxd-full \"$0\" && exec \"$@\"",
                state.toString()));
    cmd.addAll(DaemonProcess.serveCommand(List.of(), state, socket));
    byte[] hello = Submissions.exampleUnit("hello");
    String grants = Submissions.exampleGrants("hello");
    try (DaemonProcess d =
            DaemonProcess.start(new ProcessBuilder(cmd), state, socket, tmp.resolve("d.log"));
        DaemonClient c = new DaemonClient(socket)) {
      ConcurrentLinkedQueue<String> acknowledged = new ConcurrentLinkedQueue<>();
      Map<String, Integer> refusals = new ConcurrentHashMap<>();
      AtomicInteger refused = new AtomicInteger();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      List<Thread> clients = new ArrayList<>();
      for (int i = 0; i < CLIENTS; i++) {
        Thread t =
            new Thread(
                () -> {
                  // On until the file system has refused runs for a while (300 refusals).
                  while (refused.get() < 300 && System.nanoTime() < deadline) {
                    try {
                      SubmitReply r = Submissions.submit(c, hello, grants);
                      acknowledged.add(r.getRunId());
                    } catch (StatusRuntimeException e) {
                      refused.incrementAndGet();
                      refusals.merge(kind(e), 1, Integer::sum);
                    }
                  }
                });
        t.start();
        clients.add(t);
      }
      for (Thread t : clients) {
        t.join(180_000);
      }
      assertTrue(refused.get() >= 300, "the 4 MiB file system never filled: " + refusals);
      assertEquals(
          List.of("UNAVAILABLE: not stored, SQLITE_FULL"),
          List.copyOf(refusals.keySet()),
          "every refusal says the run was not stored for want of room: " + refusals);
      String log = d.log();
      long reports = log.lines().filter(l -> l.contains("submit failed: ")).count();
      assertTrue(
          reports >= 1 && reports <= 3,
          reports + " reports of " + refused.get() + " refusals:\n" + tail(log));

      // Room again: the same daemon stores runs, with nothing to restart.
      grow(d.process.pid(), state);
      for (int i = 0; i < 40; i++) {
        acknowledged.add(Submissions.submit(c, hello, grants).getRunId());
      }

      for (String run : acknowledged) {
        assertEquals(
            run, c.stub().getRun(GetRunRequest.newBuilder().setRunId(run).build()).getRunId());
      }
      DaemonProcess.Result verified = d.ctl("store", "verify");
      assertEquals(0, verified.exit(), verified.out() + verified.err());
      assertTrue(
          verified.out().contains(String.valueOf(acknowledged.size())),
          acknowledged.size() + " runs acknowledged; verify says: " + verified.out());
    }
  }

  @Test
  void aFirstStartOnAFullDiskLeavesNoKeyBehindAndStartsOnceThereIsRoom() throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    Path out = tmp.resolve("starts.log");
    // Both starts in one mount namespace: the tmpfs, filled to the last byte, then given room.
    String script =
        "mount -t tmpfs -o size=4m,mode=0700 sandboxd-full \"$0\" || exit 90\n"
            + "dd if=/dev/zero of=\"$0/filler\" bs=64k 2>/dev/null\n"
            + "\"$@\"; echo \"first start: $?\"\n"
            + "echo \"keys: $(ls -A \"$0/keys\" 2>/dev/null) host-id: $(ls -A \"$0\" | grep -c host-id)\"\n"
            + "rm \"$0/filler\"\n"
            + "\"$@\"; echo \"second start: $?\"\n"
            + "echo \"keys: $(ls -A \"$0/keys\" | tr '\\n' ' ')host-id: $(cat \"$0/host-id\")\"\n";
    List<String> cmd =
        new ArrayList<>(List.of("unshare", "-Urm", "--", "sh", "-c", script, state.toString()));
    cmd.addAll(
        DaemonProcess.serveCommand(List.of(), state, tmp.resolve("d.sock"), "--exit-when-ready"));
    Process p =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile()).start();
    assertTrue(p.waitFor(240, TimeUnit.SECONDS), "the two starts did not end");
    String said = Files.readString(out);
    assertEquals(0, p.exitValue(), said);
    assertTrue(said.contains("first start: 1"), said);
    assertTrue(said.contains(": cannot create: No space left on device"), said);
    assertTrue(said.contains("keys:  host-id: 0"), "nothing half-made is left:\n" + said);
    assertTrue(said.contains("second start: 0"), said);
    assertTrue(said.contains("keys: agent.ed25519 holder.ed25519 node.ed25519 host-id: "), said);
    assertFalse(said.contains("host-id: \n"), "a host id was written:\n" + said);
  }

  /** A refusal's code and what it says, reduced to the words that tell its kind. */
  private static String kind(StatusRuntimeException e) {
    Status s = e.getStatus();
    String d = String.valueOf(s.getDescription());
    StringBuilder k = new StringBuilder(s.getCode().name()).append(":");
    k.append(d.contains("not stored") ? " not stored" : " " + d);
    if (d.contains("SQLITE_FULL")) {
      k.append(", SQLITE_FULL");
    }
    return k.toString();
  }

  /** Remounts the daemon's tmpfs at 64 MiB, from inside its namespaces. */
  private static void grow(long pid, Path state) throws Exception {
    Process p =
        new ProcessBuilder(
                "nsenter",
                "-t",
                String.valueOf(pid),
                "-U",
                "-m",
                "--preserve-credentials",
                "mount",
                "-o",
                "remount,size=64m",
                state.toString())
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes());
    assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), out);
  }

  private static String tail(String log) {
    return log.length() <= 4000 ? log : log.substring(log.length() - 4000);
  }
}
