package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.DurableRunReply;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.GetRecordsRequest;
import io.sandboxd.daemon.rpc.GetRunRequest;
import io.sandboxd.daemon.rpc.RecordsReply;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.store.RunStore;
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
 * restart, and its whole store verifies. A durable run whose park cannot be written ends failed
 * with its cause signed, and leaves a store that verifies.
 */
class DiskFullTest {
  @TempDir Path tmp;

  private static final int CLIENTS = 4;

  @Test
  void aFullStateFileSystemRefusesRunsUntilItHasRoomAndLosesNothing() throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    Path socket = tmp.resolve("d.sock");
    byte[] hello = Submissions.exampleUnit("hello");
    String grants = Submissions.exampleGrants("hello");
    try (DaemonProcess d = onTmpfs("4m", state, socket);
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

  @Test
  void aDurableRunWhoseParkCannotBeWrittenEndsFailedWithItsFailureSignedAndTheStoreVerifies()
      throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    Path socket = tmp.resolve("d.sock");
    try (DaemonProcess d = onTmpfs("16m", state, socket);
        DaemonClient c = new DaemonClient(socket)) {
      // Some 72 MB of distinct pages: its snapshot cannot fit a 16 MiB file system, while the
      // store, once the half-written pack is gone, has room for the run's end.
      String run =
          BundleHandoffTest.detached(c, BundleHandoffTest.BIG, BundleHandoffTest.BIG_GRANTS);

      DurableRunReply r = c.stub().suspendRun(DurableRunRequest.newBuilder().setRunId(run).build());
      assertEquals("failed", r.getState(), d.log());
      String why = r.getOutcomeJson();
      assertTrue(
          why.contains("parking run " + run + ": its snapshot could not be stored")
              && why.contains("No space left on device")
              && why.contains("nothing of its snapshot is kept"),
          why);
      assertFalse(why.contains(state.toString()), "a signed outcome names no path here: " + why);
      // The failure is signed: the ending execute segment, its receipt and the attestation.
      RecordsReply records =
          c.stub().getRecords(GetRecordsRequest.newBuilder().setRunId(run).build());
      assertEquals(1, records.getSegmentsCount(), records.toString());
      assertEquals(1, records.getAttestationsCount(), records.toString());
      assertTrue(records.getAttestations(0).contains("its snapshot could not be stored"));
      List<String> lines = new ArrayList<>(records.getSegmentsList());
      lines.addAll(records.getReceiptsList());
      lines.addAll(records.getAttestationsList());
      DaemonProcess.Result checked =
          DaemonProcess.sandboxctl(
              String.join("\n", lines).getBytes(java.nio.charset.StandardCharsets.UTF_8),
              "verify",
              "--signer",
              d.publicKey(),
              "-");
      assertEquals(0, checked.exit(), checked.out() + checked.err());
      // Nothing half-written is left holding the room: no pack, no temporary.
      assertEquals(
          "",
          inNamespace(d.process.pid(), "ls -A \"$0/snapshots/packs\"", state).trim(),
          "the snapshot store after the failed park");
      DaemonProcess.Result verified = d.ctl("store", "verify");
      assertEquals(0, verified.exit(), verified.out() + verified.err());

      // A run whose snapshot fits parks and resumes to its end.
      String next = BundleHandoffTest.parked(c, DurableRunTest.COUNTER, DurableRunTest.GRANTS);
      d.resumeToCompletion(next);
      verified = d.ctl("store", "verify");
      assertEquals(0, verified.exit(), verified.out() + verified.err());
      assertFalse(d.log().contains("damage"), d.log());
    }
  }

  @Test
  void unitsOfManyModulesCannotTakeTheRoomTheNodesRecordsNeed() throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    Path socket = tmp.resolve("d.sock");
    try (DaemonProcess d = onTmpfs("32m", state, socket);
        DaemonClient c = new DaemonClient(socket)) {
      // Each module's quota is 1 GiB, so no quota stops a client that writes 1 MiB from each of
      // as many modules as it likes: the node's reserve must. 5% of 32 MiB (1.6 MB) is less than
      // the run store's log takes between checkpoints, so the reserve is that instead.
      int written = 0;
      String refusedWith = null;
      for (int i = 0; i < 60 && refusedWith == null; i++) {
        byte[] unit = com.dylibso.chicory.wabt.Wat2Wasm.parse(MIB_UNIT.replace("NAME", "m" + i));
        SubmitReply r = Submissions.submit(c, unit, FILE_GRANTS);
        if (r.getOutcomeJson().contains("Completed")) {
          written++;
        } else {
          refusedWith = r.getOutcomeJson();
        }
      }
      assertTrue(
          String.valueOf(refusedWith).contains("entry returned -10"),
          written + " MiB written, then " + refusedWith + "\n" + tail(d.log()));
      assertTrue(written >= 16, written + " MiB written before the reserve");
      // What the units left free holds the store's log at its largest (less the few records
      // stored since the last write admitted; at 5% of the tmpfs it was under 3 MB).
      long free = freeBytes(d.process.pid(), state);
      assertTrue(
          free >= RunStore.LOG_ROOM_BYTES - (1 << 20),
          free
              + " bytes free after "
              + written
              + " MiB; the store's log may take "
              + RunStore.LOG_ROOM_BYTES);
      // WASI writes, sandbox writes and kv puts of a new module all stop at the reserve at once
      // (EDQUOT 19, QUOTA -10), though its own quotas are far off; its run is stored.
      SubmitReply wasi =
          Submissions.submit(
              c,
              StorageEscapeTest.guest("QUOTA"),
              StorageEscapeTest.grants(
                  "{\"read\":[],\"write\":[\"data/**\"],\"delete\":[]}",
                  "{\"read\":false,\"write\":true,\"prefixes\":[[113,47]]}"),
              "_start",
              120);
      StorageEscapeTest.assertPrinted(
          StorageEscapeTest.out(wasi),
          "kv stopped at 0 status=-10\n",
          "storage stopped at 0 errno=19\n",
          "storage_write stopped at 0 status=-10\n");
      // Runs are still stored, and more than one module's write of room is still there for them.
      for (int i = 0; i < 40; i++) {
        Submissions.submit(c, Submissions.exampleUnit("hello"), Submissions.exampleGrants("hello"));
      }
      List<String> told =
          d.log().lines().filter(l -> l.contains("storage: refused a unit's write")).toList();
      assertEquals(1, told.size(), tail(d.log()));
      assertTrue(told.get(0).contains("quotas.reserve_bytes"), told.get(0));
      assertEquals(
          1, d.log().lines().filter(l -> l.contains("kv: refused a unit's write")).count());
      DaemonProcess.Result verified = d.ctl("store", "verify");
      assertEquals(0, verified.exit(), verified.out() + verified.err());
    }
  }

  /**
   * Writes 3 MB to {@code big} (more than the file system has), deletes it, writes {@code d/x},
   * then writes {@code d}, a directory: the three statuses, each plus 10, as one number.
   */
  private static final String STORAGE_UNIT =
      """
      (module
        (import "sandbox" "storage_write" (func $w (param i32 i32 i64 i32 i32) (result i32)))
        (import "sandbox" "storage_delete" (func $d (param i32 i32) (result i32)))
        (memory 64)
        (data (i32.const 0) "big")
        (data (i32.const 16) "d/x")
        (func (export "run") (result i32) (local $a i32) (local $b i32)
          (local.set $a (call $w (i32.const 0) (i32.const 3) (i64.const 0) (i32.const 4096) (i32.const 3000000)))
          (local.set $b (call $d (i32.const 0) (i32.const 3)))
          (drop (call $w (i32.const 16) (i32.const 3) (i64.const 0) (i32.const 0) (i32.const 3)))
          (i32.add
            (i32.add
              (i32.mul (i32.const 10000) (i32.add (i32.const 10) (local.get $a)))
              (i32.mul (i32.const 100) (i32.add (i32.const 10) (local.get $b))))
            (i32.add (i32.const 10)
              (call $w (i32.const 16) (i32.const 1) (i64.const 0) (i32.const 0) (i32.const 3))))))
      """;

  /** Puts a value of 1,000,000 bytes under {@code k}: the status. */
  private static final String KV_UNIT =
      """
      (module
        (import "sandbox" "kv_put" (func $put (param i32 i32 i32 i32) (result i32)))
        (memory 32)
        (data (i32.const 0) "k")
        (func (export "run") (result i32)
          (call $put (i32.const 0) (i32.const 1) (i32.const 4096) (i32.const 1000000))))
      """;

  private static final String NO_RESERVE = "{\"quotas\": {\"reserve_bytes\": 0}}";

  /** Writes 1 MiB to {@code f}: the status. NAME makes each module a module of its own. */
  private static final String MIB_UNIT =
      """
      (module
        (import "sandbox" "storage_write" (func $w (param i32 i32 i64 i32 i32) (result i32)))
        (memory 17)
        (data (i32.const 0) "f")
        (data (i32.const 16) "NAME")
        (func (export "run") (result i32)
          (call $w (i32.const 0) (i32.const 1) (i64.const 0) (i32.const 65536) (i32.const 1048576))))
      """;

  private static final String FILE_GRANTS =
      """
      {"compute": {"devices": [], "energy_budget_uj": 1000000000, "cpu_time_ms": 5000,
                   "memory_bytes": 4194304},
       "storage": {"read": [], "write": ["**"], "delete": ["**"]},
       "network": {"outbound": [], "inbound": false},
       "kv": {"read": true, "write": true, "prefixes": []},
       "host": {"logging": true, "clock": false, "random": false, "inference": false}}
      """;

  @Test
  void storageAndKvCallsTheFullDiskFailsAreAnsweredUnavailableAndToldToTheOperatorAtAPace()
      throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    Path socket = tmp.resolve("d.sock");
    byte[] storageUnit = com.dylibso.chicory.wabt.Wat2Wasm.parse(STORAGE_UNIT);
    byte[] kvUnit = com.dylibso.chicory.wabt.Wat2Wasm.parse(KV_UNIT);
    // No reserve: the writes reach the full file system itself.
    Path config = Files.writeString(tmp.resolve("no-reserve.json"), NO_RESERVE);
    try (DaemonProcess d = onTmpfs("16m", state, socket, "--config", config.toString());
        DaemonClient c = new DaemonClient(socket)) {
      // Everything but 1 MiB taken: room for runs, not for 3 MB of storage or a 1 MB value.
      inNamespace(
          d.process.pid(),
          "dd if=/dev/zero of=\"$0/filler\" bs=64k 2>/dev/null; truncate -s -1M \"$0/filler\"",
          state);
      int unavailable = 10 + (-8);
      int ok = 10;
      for (int i = 0; i < 3; i++) {
        SubmitReply r = Submissions.submit(c, storageUnit, FILE_GRANTS);
        assertTrue(
            r.getOutcomeJson()
                .contains("entry returned " + (unavailable * 10000 + ok * 100 + unavailable)),
            r.getOutcomeJson());
      }
      String log = d.log();
      List<String> told = log.lines().filter(l -> l.contains(": failed on this node")).toList();
      // The first ENOSPC is told; the next two, within the period, are held back; the write to
      // a directory (the unit's own doing) and the delete are not told at all.
      assertEquals(1, told.size(), tail(log));
      assertTrue(
          told.get(0).contains("storage_write: failed on this node")
              && told.get(0).contains("No space left on device"),
          told.get(0));

      // A 1 MB value: SQLite's log takes what room there is and the put fails. The run may then
      // not be stored either; either way the node says why the put failed.
      try {
        SubmitReply r = Submissions.submit(c, kvUnit, FILE_GRANTS);
        assertTrue(r.getOutcomeJson().contains("entry returned -8"), r.getOutcomeJson());
      } catch (StatusRuntimeException notStored) {
        assertEquals(
            Status.Code.UNAVAILABLE, notStored.getStatus().getCode(), notStored.toString());
      }
      told = d.log().lines().filter(l -> l.contains("kv_put: failed on this node")).toList();
      assertEquals(1, told.size(), tail(d.log()));
      assertTrue(told.get(0).contains("SQLITE_FULL"), told.get(0));

      // Room again: the same kv store takes the value, with nothing restarted.
      grow(d.process.pid(), state);
      SubmitReply stored = Submissions.submit(c, kvUnit, FILE_GRANTS);
      assertTrue(stored.getOutcomeJson().contains("Completed"), stored.getOutcomeJson());
      DaemonProcess.Result verified = d.ctl("store", "verify");
      assertEquals(0, verified.exit(), verified.out() + verified.err());
    }
  }

  /**
   * A daemon whose {@code state} directory is a tmpfs of {@code size} in a mount namespace of its
   * own (the socket and log stay outside), serving on {@code socket}.
   */
  private DaemonProcess onTmpfs(String size, Path state, Path socket, String... extra)
      throws Exception {
    List<String> cmd = onTmpfs(size, state);
    cmd.addAll(DaemonProcess.serveCommand(List.of(), state, socket, extra));
    return DaemonProcess.start(new ProcessBuilder(cmd), state, socket, tmp.resolve("d.log"));
  }

  /**
   * The start of a command line that runs the rest with {@code dir} a tmpfs of {@code size} in a
   * user and mount namespace of its own. unshare execs sh, which execs the rest: the process
   * started is the program itself, and its pid names the namespaces for {@link #inNamespace}.
   */
  static List<String> onTmpfs(String size, Path dir) {
    return new ArrayList<>(
        List.of(
            "unshare",
            "-Urm",
            "--",
            "sh",
            "-c",
            "mount -t tmpfs -o size=" + size + ",mode=0700 sandboxd-full \"$0\" && exec \"$@\"",
            dir.toString()));
  }

  /** Runs {@code script} ({@code $0} is {@code state}) in the daemon's namespaces; its output. */
  static String inNamespace(long pid, String script, Path state) throws Exception {
    Process p =
        new ProcessBuilder(
                "nsenter",
                "-t",
                String.valueOf(pid),
                "-U",
                "-m",
                "--preserve-credentials",
                "sh",
                "-c",
                script,
                state.toString())
            .redirectErrorStream(true)
            .start();
    String out =
        new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), out);
    return out;
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

  /** Bytes free for an unprivileged writer on the daemon's tmpfs, seen from its namespaces. */
  private static long freeBytes(long pid, Path state) throws Exception {
    String[] f = inNamespace(pid, "stat -f -c '%a %S' \"$0\"", state).trim().split(" ", 2);
    return Long.parseLong(f[0]) * Long.parseLong(f[1]);
  }

  /** Remounts the daemon's tmpfs at 64 MiB, from inside its namespaces. */
  private static void grow(long pid, Path state) throws Exception {
    inNamespace(pid, "mount -o remount,size=64m \"$0\"", state);
  }

  private static String tail(String log) {
    return log.length() <= 4000 ? log : log.substring(log.length() - 4000);
  }
}
