package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.google.protobuf.ByteString;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SandboxdGrpc;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 24 item 2, fairness, through the running daemon: one connection floods it with submissions
 * that each hold a handler for their whole run, and a second connection's submission is still
 * served long before the flood is, while the daemon's threads stay within its handler pool; and one
 * client's compilations hold no more than its share of the compile slots.
 */
class CallFairnessTest {
  @TempDir Path dir;

  static final byte[] SPINS =
      Wat2Wasm.parse("(module (func (export \"step\") (result i32) (loop br 0) i32.const 0))");

  static final int FLOOD = 128;

  /** FairCalls' handler threads on this node (two unit slots). */
  static final int HANDLERS = 64;

  /** FairCalls' share of one connection: half the handlers. */
  static final int CONNECTION_SHARE = HANDLERS / 2;

  @Test
  void aFloodingConnectionDoesNotStarveAnotherConnectionsSubmission() throws Exception {
    Path socket = dir.resolve("d.sock");
    try (DaemonProcess d =
            DaemonProcess.startWithConfig(
                dir.resolve("state"), socket, "{\"max_concurrent_units\":2}");
        DaemonClient flood = new DaemonClient(socket);
        DaemonClient other = new DaemonClient(socket)) {
      long pid = d.process.pid();
      // Each flood submission spins until its 100 ms CPU grant stops it cold.
      String grants = WarmPoolTest.grants(1 << 20, 100);
      // Compiled once before the flood, so the flood is of runs, not of compilations.
      Submissions.submit(flood, SPINS, grants, "step", 120);
      int threads0 = threads(pid);

      Answers<SubmitReply> flooded = new Answers<>(FLOOD, SubmitReply::getOutcomeJson);
      SandboxdGrpc.SandboxdStub stub = SandboxdGrpc.newStub(flood.channel());
      for (int i = 0; i < FLOOD; i++) {
        stub.submit(
            SubmitRequest.newBuilder()
                .setModule(ByteString.copyFrom(SPINS))
                .setGrantsJson(grants)
                .setEntry("step")
                .build(),
            flooded);
      }
      // Let the flood reach the daemon and fill its share (a setup pause, not a measurement).
      Thread.sleep(1000);
      int busiest = threads(pid);
      SubmitReply mine =
          Submissions.submit(
              other,
              Submissions.exampleUnit("hello"),
              Submissions.exampleGrants("hello"),
              "run",
              120);
      int answeredThen = flooded.answered();
      busiest = Math.max(busiest, threads(pid));
      assertEquals("\"Completed\"", mine.getOutcomeJson());
      // Served in turn, not behind the whole flood: in arrival order every flood submission would
      // have been handled (and queued for a unit slot) ahead of it.
      assertTrue(
          answeredThen <= FLOOD - CONNECTION_SHARE,
          "the second connection was served only after " + answeredThen + " of the flood's calls");
      // A thread per call would be FLOOD more; the handler pool has HANDLERS.
      assertTrue(busiest <= threads0 + HANDLERS + 8, threads0 + " -> " + busiest);

      flooded.assertAllReplied(300);
      assertTrue(
          flooded.kept.stream().allMatch(o -> o.contains("CpuTime")),
          String.valueOf(flooded.kept.peek()));
      System.out.printf(
          "flood of %d submissions on one connection: another connection's submission served"
              + " after %d of them; daemon threads %d -> at most %d%n",
          FLOOD, answeredThen, threads0, busiest);
      assertTrue(d.process.isAlive());
    }
  }

  /**
   * {@code n} functions () -> i32, the first exported as {@code run} and returning 0, the others
   * {@code salt} (so each salt is another module, compiled anew): compile work is per function.
   */
  static byte[] tinyFunctions(int n, int salt) {
    java.io.ByteArrayOutputStream code = new java.io.ByteArrayOutputStream();
    u32(code, n);
    for (int i = 0; i < n; i++) {
      // size, no locals, i32.const salt (two-byte LEB), end
      int value = i == 0 ? 0 : salt & 0x7f;
      code.writeBytes(new byte[] {0x05, 0x00, 0x41, (byte) (0x80 | value), 0x00, 0x0b});
    }
    java.io.ByteArrayOutputStream fs = new java.io.ByteArrayOutputStream();
    u32(fs, n);
    for (int i = 0; i < n; i++) {
      fs.write(0);
    }
    java.io.ByteArrayOutputStream m = new java.io.ByteArrayOutputStream();
    m.writeBytes(new byte[] {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00});
    section(m, 1, new byte[] {0x01, 0x60, 0x00, 0x01, 0x7f});
    section(m, 3, fs.toByteArray());
    section(m, 7, new byte[] {0x01, 0x03, 'r', 'u', 'n', 0x00, 0x00});
    section(m, 10, code.toByteArray());
    return m.toByteArray();
  }

  private static void section(java.io.ByteArrayOutputStream m, int id, byte[] content) {
    m.write(id);
    u32(m, content.length);
    m.writeBytes(content);
  }

  private static void u32(java.io.ByteArrayOutputStream o, long v) {
    do {
      int b = (int) (v & 0x7f);
      v >>>= 7;
      o.write(v == 0 ? b : b | 0x80);
    } while (v != 0);
  }

  static final int HEAVY = 8;

  /**
   * Issue 24 item 4: one client submits {@link #HEAVY} compile-heavy modules at once (each at the
   * function floor, 10,000 functions); another client, a `sandboxctl run` process, still gets a
   * compile slot: its run completes while most of the first client's compilations wait on their own
   * share, where in arrival order it would have waited for them.
   */
  @Test
  void aClientCompilingManyModulesLeavesACompileSlotToAnother() throws Exception {
    Path socket = dir.resolve("c.sock");
    try (DaemonProcess d =
            DaemonProcess.startWithConfig(
                dir.resolve("state-c"),
                socket,
                "{\"max_concurrent_units\":2,\"compile\":{\"max_concurrent\":2}}");
        DaemonClient heavy = new DaemonClient(socket)) {
      Answers<SubmitReply> compiled = new Answers<>(HEAVY, SubmitReply::getOutcomeJson);
      SandboxdGrpc.SandboxdStub stub = SandboxdGrpc.newStub(heavy.channel());
      String grants = WarmPoolTest.grants(1 << 20);
      for (int i = 0; i < HEAVY; i++) {
        stub.submit(
            SubmitRequest.newBuilder()
                .setModule(ByteString.copyFrom(tinyFunctions(10_000, i)))
                .setGrantsJson(grants)
                .build(),
            compiled);
      }
      Path hello = DaemonProcess.ROOT.resolve("examples/hello.wasm");
      Path helloGrants = DaemonProcess.ROOT.resolve("examples/hello.grants.json");
      DaemonProcess.Result other =
          DaemonProcess.sandboxctl(
              null,
              "run",
              hello.toString(),
              "--grants",
              helloGrants.toString(),
              "--socket",
              socket.toString());
      int answeredThen = compiled.answered();
      assertEquals(0, other.exit(), other.out() + other.err());
      compiled.assertAllReplied(300);
      assertTrue(
          compiled.kept.stream().allMatch("\"Completed\""::equals), compiled.kept.toString());
      System.out.printf(
          "%d compile-heavy submissions from one client: another client's run completed after %d"
              + " of them%n",
          HEAVY, answeredThen);
      // In arrival order it would have waited for at least HEAVY - 2 of them.
      assertTrue(
          answeredThen <= HEAVY / 2,
          "the other client ran only after " + answeredThen + " of " + HEAVY + " compilations");
      assertTrue(d.process.isAlive());
    }
  }

  static int threads(long pid) throws Exception {
    return Poll.entries(Path.of("/proc/" + pid + "/task"));
  }
}
