package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.google.protobuf.ByteString;
import io.sandboxd.attest.Blake3;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.PoolInfo;
import io.sandboxd.daemon.rpc.PutModuleRequest;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 24 items 1 and 6 through the running daemon: a module whose start function would run when
 * an instance is prepared is never pooled (it spins, or grows memory), and `sandboxctl pools` says
 * why; pools whose minimums cannot fit under the ceiling (configured or adaptive) settle, and an
 * idle node then stores no eviction records.
 */
class PoolEscapeTest {
  @TempDir Path dir;

  static final byte[] SPINS_AT_START =
      Wat2Wasm.parse(
          "(module (memory 1 1) (func $s (loop br 0)) (start $s)"
              + " (func (export \"run\") (result i32) i32.const 0))");
  static final byte[] GROWS_AT_START =
      Wat2Wasm.parse(
          "(module (memory 1 4) (func $s (drop (memory.grow (i32.const 3)))) (start $s)"
              + " (func (export \"run\") (result i32) i32.const 0))");

  /** Logs from its start function, then its entry reports whether that log call succeeded. */
  static final byte[] LOGS_AT_START =
      Wat2Wasm.parse(
          "(module (import \"sandbox\" \"log\" (func $log (param i32 i32) (result i32)))"
              + " (memory 1 1) (data (i32.const 0) \"logged at start\")"
              + " (global $st (mut i32) (i32.const -1))"
              + " (func $s (global.set $st (call $log (i32.const 0) (i32.const 15)))) (start $s)"
              + " (func (export \"run\") (result i32) global.get $st))");

  static final byte[] A = WarmPoolTest.WRITER;
  static final byte[] B = WarmPoolTest.OTHER;

  static String grants(long cpuMs) {
    return WarmPoolTest.grants(1 << 20, cpuMs);
  }

  private Path config(String json) throws Exception {
    Path cfg = dir.resolve("sandboxd-" + System.nanoTime() + ".json");
    Files.writeString(cfg, json);
    return cfg;
  }

  @Test
  void aStartFunctionRunsOnlyInsideAMeteredRunNeverInAPool() throws Exception {
    Path cfg =
        config(
            "{\"pool_limits\":{\"adaptive\":{\"submits\":1,\"window_ms\":60000,\"min_idle\":1,"
                + "\"max_idle\":2,\"min_warmup_us\":0,\"ttl_ms\":60000},\"refill_interval_ms\":50}}");
    Path socket = dir.resolve("d.sock");
    try (DaemonProcess d =
            DaemonProcess.start(dir.resolve("state"), socket, "--config", cfg.toString());
        DaemonClient c = new DaemonClient(socket)) {
      // Spins: every run, the third included, is stopped by its own 300 ms grant; none is warm.
      for (int i = 0; i < 3; i++) {
        SubmitReply r = Submissions.submit(c, SPINS_AT_START, grants(300));
        assertTrue(r.getOutcomeJson().contains("Terminated"), r.getOutcomeJson());
        assertEquals("", r.getClaim(), "run " + i + " was served warm");
        Thread.sleep(200);
      }
      // Grows memory at start: runs complete, cold.
      for (int i = 0; i < 3; i++) {
        SubmitReply r = Submissions.submit(c, GROWS_AT_START, grants(5000));
        assertEquals("\"Completed\"", r.getOutcomeJson());
        assertEquals("", r.getClaim(), "run " + i + " was served warm");
        Thread.sleep(200);
      }
      // Calls a granted import at start: bound to its run before it starts, so the call succeeds
      // (status 0), its log is the run's, and the run completes; denied, the start's call fails.
      String logging = grants(5000).replace("\"logging\":false", "\"logging\":true");
      for (int i = 0; i < 3; i++) {
        SubmitReply r = Submissions.submit(c, LOGS_AT_START, logging);
        assertEquals("\"Completed\"", r.getOutcomeJson(), r.getLog());
        assertTrue(r.getLog().contains("logged at start"), r.getLog());
        assertEquals("", r.getClaim(), "run " + i + " was served warm");
        Thread.sleep(200);
      }
      SubmitReply denied = Submissions.submit(c, LOGS_AT_START, grants(5000));
      assertTrue(denied.getOutcomeJson().contains("Failed"), denied.getOutcomeJson());
      assertTrue(!denied.getLog().contains("logged at start"), denied.getLog());
      for (byte[] m : List.of(SPINS_AT_START, GROWS_AT_START, LOGS_AT_START)) {
        PoolInfo p = WarmPoolTest.pool(c, m).orElseThrow();
        assertEquals(0, p.getIdle());
        assertTrue(p.getNotPoolable().contains("start function"), p.getNotPoolable());
      }
      DaemonProcess.Result shown =
          DaemonProcess.sandboxctl(null, "pools", "--socket", socket.toString());
      assertEquals(0, shown.exit(), shown.err());
      assertTrue(
          shown.out().contains("not poolable: the module has a start function"), shown.out());
      assertEquals(0, WarmPoolTest.pools(c, 0).getIdleBytes());
      // The refill thread is not pinned: an ordinary module still gets its pool.
      Submissions.submit(c, A, WarmPoolTest.GRANTS);
      Submissions.submit(c, A, WarmPoolTest.GRANTS);
      WarmPoolTest.await(
          "a warm instance",
          () -> WarmPoolTest.pool(c, A).map(p -> p.getIdle() >= 1).orElse(false));
    }
  }

  @Test
  void poolsWhoseMinimumsCannotFitSettleAndAnIdleNodeEvictsNothing() throws Exception {
    Path state = dir.resolve("state");
    Path socket = dir.resolve("d.sock");
    // Configured pools need the node to hold their modules: store them first.
    try (DaemonProcess d = DaemonProcess.start(state, socket);
        DaemonClient c = new DaemonClient(socket)) {
      for (byte[] m : List.of(A, B)) {
        c.stub().putModule(PutModuleRequest.newBuilder().setModule(ByteString.copyFrom(m)).build());
      }
    }
    // Variant 1, configured: minimums of 3 + 3 one-page instances under a ceiling of 3.
    Path configured =
        config(
            "{\"pools\":[{\"module\":\""
                + Blake3.hex(A)
                + "\",\"min_idle\":3,\"max_idle\":3,\"ttl_ms\":600000},{\"module\":\""
                + Blake3.hex(B)
                + "\",\"min_idle\":3,\"max_idle\":3,\"ttl_ms\":600000}],"
                + "\"pool_limits\":{\"max_idle_bytes\":200000,\"refill_interval_ms\":20}}");
    try (DaemonProcess d = DaemonProcess.start(state, socket, "--config", configured.toString());
        DaemonClient c = new DaemonClient(socket)) {
      Thread.sleep(1000);
      int settled = WarmPoolTest.evictions(c, e -> true).size();
      Thread.sleep(3000);
      assertEquals(settled, WarmPoolTest.evictions(c, e -> true).size(), "evictions while idle");
      assertTrue(d.log().contains("capped to"), d.log());
      assertTrue(WarmPoolTest.pools(c, 0).getIdleBytes() <= 200000);
    }
    // Variant 2, adaptive: minimums of 2 + 2 under a ceiling of 3, demand for both, then none.
    Path adaptive =
        config(
            "{\"pool_limits\":{\"adaptive\":{\"submits\":1,\"window_ms\":600000,\"min_idle\":2,"
                + "\"max_idle\":2,\"min_warmup_us\":0,\"ttl_ms\":600000},\"max_idle_bytes\":200000,"
                + "\"refill_interval_ms\":20}}");
    try (DaemonProcess d = DaemonProcess.start(state, socket, "--config", adaptive.toString());
        DaemonClient c = new DaemonClient(socket)) {
      for (byte[] m : List.of(A, B, A, B, A, B)) {
        Submissions.submit(c, m, WarmPoolTest.GRANTS);
      }
      Thread.sleep(1000);
      int settled = WarmPoolTest.evictions(c, e -> true).size();
      Thread.sleep(3000);
      int after = WarmPoolTest.evictions(c, e -> true).size();
      assertEquals(settled, after, "evictions while idle");
      assertFalse(d.log().contains("SEVERE"), d.log());
    }
  }
}
