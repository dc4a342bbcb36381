package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.WarmpoolClaim;
import io.sandboxd.attest.WarmpoolEvict;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ListPoolsReply;
import io.sandboxd.daemon.rpc.ListPoolsRequest;
import io.sandboxd.daemon.rpc.PoolInfo;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Warm pools through the running daemon: adaptive pools, warm claims with their signed records and
 * idle energy, cold fallback, no state carried between runs, TTL, capacity, drift and shutdown
 * evictions verified by `sandboxctl verify`, configured pools, and `sandboxctl pools`.
 */
class WarmPoolTest {
  @TempDir Path dir;

  // Returns 7 if memory[100] is not zero at start (state left by an earlier run), then writes it.
  static final byte[] WRITER =
      Wat2Wasm.parse(
          """
          (module
            (memory 1 1)
            (func (export "run") (result i32)
              (if (i32.ne (i32.load (i32.const 100)) (i32.const 0))
                (then (return (i32.const 7))))
              (i32.store (i32.const 100) (i32.const 42))
              (i32.const 0)))
          """);

  static final byte[] OTHER =
      Wat2Wasm.parse("(module (memory 1 1) (func (export \"run\") (result i32) i32.const 0))");

  static String grants(long memoryBytes) {
    return grants(memoryBytes, 5000);
  }

  /** Grants of {@code memoryBytes} and {@code cpuMs}, and nothing but compute. */
  static String grants(long memoryBytes, long cpuMs) {
    return "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000000,\"cpu_time_ms\":"
        + cpuMs
        + ",\"memory_bytes\":"
        + memoryBytes
        + "},\"storage\":{\"read\":[],\"write\":[],\"delete\":[]},"
        + "\"network\":{\"outbound\":[],\"inbound\":false},"
        + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
        + "\"host\":{\"logging\":false,\"clock\":false,\"random\":false,\"inference\":false}}";
  }

  static final String GRANTS = grants(1 << 20);

  Path config(String json) throws Exception {
    Path cfg = dir.resolve("sandboxd-" + System.nanoTime() + ".json");
    Files.writeString(cfg, json);
    return cfg;
  }

  static ListPoolsReply pools(DaemonClient c, int evictions) {
    return c.stub().listPools(ListPoolsRequest.newBuilder().setEvictions(evictions).build());
  }

  static Optional<PoolInfo> pool(DaemonClient c, byte[] module) {
    String address = Blake3.hex(module);
    return pools(c, 0).getPoolsList().stream()
        .filter(p -> p.getModule().equals(address))
        .findFirst();
  }

  static void await(String what, java.util.function.BooleanSupplier done) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(20);
    }
  }

  static List<WarmpoolEvict> evictions(DaemonClient c, Predicate<WarmpoolEvict> which) {
    List<WarmpoolEvict> out = new ArrayList<>();
    for (String e : pools(c, 1000).getEvictionsList()) {
      WarmpoolEvict r = WarmpoolEvict.fromCore(Envelope.fromJson(CanonicalJson.parse(e)).core());
      if (which.test(r)) {
        out.add(r);
      }
    }
    return out;
  }

  static long receiptIdleUj(SubmitReply r) {
    return Envelope.fromJson(CanonicalJson.parse(r.getReceipt())).core().get("idle_uj").asLong();
  }

  @Test
  void adaptivePoolServesWarmClaimsWithSignedRecordsAndEvictsOnTtlCapacityDriftShutdown()
      throws Exception {
    Path cfg =
        config(
            "{\"pool_limits\":{\"adaptive\":{\"submits\":1,\"window_ms\":60000,\"min_idle\":1,"
                + "\"max_idle\":1,\"min_warmup_us\":0,\"ttl_ms\":5000},\"max_idle_bytes\":65536,"
                + "\"idle_estimate_mw\":5000000000,\"refill_interval_ms\":50}}");
    Path state = dir.resolve("state");
    Path socket = dir.resolve("d.sock");
    String writer = Blake3.hex(WRITER);
    String claimRun;
    String nodeKey;
    try (DaemonProcess d = DaemonProcess.start(state, socket, "--config", cfg.toString());
        DaemonClient c = new DaemonClient(socket)) {
      // No pool before demand: the first two submissions start cold (the second makes the pool).
      for (int i = 0; i < 2; i++) {
        SubmitReply cold = Submissions.submit(c, WRITER, GRANTS);
        assertEquals("\"Completed\"", cold.getOutcomeJson());
        assertEquals("", cold.getClaim());
        assertEquals(0, receiptIdleUj(cold));
      }
      await("a warm instance", () -> pool(c, WRITER).map(p -> p.getIdle() == 1).orElse(false));
      Thread.sleep(100);
      SubmitReply warm = Submissions.submit(c, WRITER, GRANTS);
      // A fresh instance: memory[100] is zero although the earlier runs wrote it.
      assertEquals("\"Completed\"", warm.getOutcomeJson());
      assertFalse(warm.getClaim().isEmpty(), "claim expected");
      Envelope claimEnv = Envelope.fromJson(CanonicalJson.parse(warm.getClaim()));
      nodeKey = Envelope.fromJson(CanonicalJson.parse(warm.getReceipt())).publicKey();
      WarmpoolClaim claim = WarmpoolClaim.fromCore(claimEnv.core());
      assertEquals(warm.getRunId(), claim.runId());
      assertEquals("S2", claim.tier());
      assertEquals(null, claim.manifest());
      assertTrue(claim.pool().startsWith(writer), claim.pool());
      assertTrue(claim.accruedIdleUj() > 0, "idle " + claim.accruedIdleUj());
      // The receipt carries the claim's idle energy, outside total_uj (never against the budget).
      assertEquals(claim.accruedIdleUj(), receiptIdleUj(warm));
      claimRun = warm.getRunId();
      // Every later run gets a fresh instance too (warm or cold), never a used one.
      for (int i = 0; i < 4; i++) {
        await("refill", () -> pool(c, WRITER).map(p -> p.getIdle() == 1).orElse(false));
        assertEquals(
            "\"Completed\"", Submissions.submit(c, WRITER, GRANTS).getOutcomeJson(), "run " + i);
      }
      PoolInfo p = pool(c, WRITER).orElseThrow();
      assertTrue(p.getHits() >= 1, p.toString());
      assertEquals(p.getClaims(), p.getHits() + p.getMisses());

      // `runs show --json` includes the claim; `sandboxctl verify` verifies it, with the receipt.
      DaemonProcess.Result shown =
          DaemonProcess.sandboxctl(
              null, "runs", "show", claimRun, "--json", "--socket", socket.toString());
      assertEquals(0, shown.exit(), shown.err());
      JsonNode run = CanonicalJson.mapper().readTree(shown.out());
      assertTrue(run.get("warm").asBoolean());
      assertEquals(claimEnv.address(), run.get("claim").get("address").asText());
      Path claimFile = dir.resolve("claim.json");
      Files.writeString(claimFile, run.get("claim").toString());
      DaemonProcess.Result v =
          DaemonProcess.sandboxctl(null, "verify", claimFile.toString(), "--signer", nodeKey);
      assertEquals(0, v.exit(), v.out() + v.err());
      assertTrue(v.out().contains("valid: " + WarmpoolClaim.SCHEMA), v.out());
      String both = warm.getClaim() + "\n" + warm.getReceipt() + "\n";
      v =
          DaemonProcess.sandboxctl(
              both.getBytes(StandardCharsets.UTF_8), "verify", "-", "--signer", nodeKey);
      assertEquals(0, v.exit(), v.out() + v.err());
      // A claim whose idle energy differs from its run's receipt does not verify.
      String forged =
          Envelope.sign(
                      new WarmpoolClaim(
                              claim.pool(),
                              claim.instance(),
                              claim.warmedMs(),
                              claim.claimedMs(),
                              "S2",
                              null,
                              claim.accruedIdleUj() + 1,
                              claim.provenance(),
                              claim.runId())
                          .toCore(),
                      io.sandboxd.attest.SigningKey.generate())
                  .toJsonLine()
              + "\n"
              + warm.getReceipt()
              + "\n";
      v =
          DaemonProcess.sandboxctl(
              forged.getBytes(StandardCharsets.UTF_8), "verify", "-", "--signer", nodeKey);
      assertNotEquals(0, v.exit(), v.out() + v.err());

      // TTL: an idle instance past ttl_ms is evicted with its overhead.
      await(
          "a TTL eviction",
          () -> !evictions(c, e -> e.reason() == WarmpoolEvict.Reason.Ttl).isEmpty());

      // Drift: runs now ask for other memory limits; what the pool holds no longer fits them.
      await("refill", () -> pool(c, WRITER).map(q -> q.getIdle() == 1).orElse(false));
      SubmitReply drifted = Submissions.submit(c, WRITER, grants(1 << 19));
      assertEquals("\"Completed\"", drifted.getOutcomeJson());
      assertEquals("", drifted.getClaim());
      assertFalse(evictions(c, e -> e.reason() == WarmpoolEvict.Reason.Drift).isEmpty());

      // Capacity: the ceiling holds one instance; a module with newer demand takes its room.
      await("refill", () -> pool(c, WRITER).map(q -> q.getIdle() == 1).orElse(false));
      Submissions.submit(c, OTHER, GRANTS);
      Submissions.submit(c, OTHER, GRANTS);
      await(
          "a capacity eviction",
          () -> !evictions(c, e -> e.reason() == WarmpoolEvict.Reason.Capacity).isEmpty());
      await("the other pool warm", () -> pool(c, OTHER).map(q -> q.getIdle() == 1).orElse(false));
      assertTrue(pools(c, 0).getIdleBytes() <= 65536);

      // `sandboxctl pools --json` shows each pool with its counters.
      DaemonProcess.Result listed =
          DaemonProcess.sandboxctl(null, "pools", "--json", "--socket", socket.toString());
      assertEquals(0, listed.exit(), listed.err());
      JsonNode all = CanonicalJson.mapper().readTree(listed.out());
      JsonNode mine = null;
      for (JsonNode n : all) {
        if (n.get("module").asText().equals(writer)) {
          mine = n;
        }
      }
      assertTrue(mine != null, listed.out());
      for (String f :
          List.of(
              "module",
              "manifest",
              "tier",
              "idle",
              "claims",
              "hits",
              "misses",
              "evictions",
              "idle_uj")) {
        assertTrue(mine.has(f), "field " + f + " in " + mine);
      }
      assertTrue(mine.get("evictions").get("Ttl").asLong() >= 1, mine.toString());
      assertTrue(mine.get("idle_uj").asLong() > 0, mine.toString());
      d.stop();
    }
    // Shutdown evicts what was idle; every eviction record verifies, each with overhead > 0.
    try (DaemonProcess d = DaemonProcess.start(state, socket);
        DaemonClient c = new DaemonClient(socket)) {
      List<WarmpoolEvict> all = evictions(c, e -> true);
      assertTrue(
          all.stream().anyMatch(e -> e.reason() == WarmpoolEvict.Reason.Shutdown), all.toString());
      for (WarmpoolEvict e : all) {
        assertTrue(e.overheadUj() > 0, e.toString());
      }
      DaemonProcess.Result lines =
          DaemonProcess.sandboxctl(
              null, "pools", "--evictions", "1000", "--socket", socket.toString());
      assertEquals(0, lines.exit(), lines.err());
      DaemonProcess.Result v =
          DaemonProcess.sandboxctl(
              lines.out().getBytes(StandardCharsets.UTF_8), "verify", "-", "--signer", nodeKey);
      assertEquals(0, v.exit(), v.out() + v.err());
      // The warm run's claim is still stored with it.
      DaemonProcess.Result shown =
          DaemonProcess.sandboxctl(null, "runs", "show", claimRun, "--socket", socket.toString());
      assertTrue(shown.out().contains("claim       {"), shown.out());
    }
  }

  @Test
  void configuredPoolsWarmModulesTheNodeHoldsAndWarnAboutOthers() throws Exception {
    Path state = dir.resolve("state2");
    Path socket = dir.resolve("c.sock");
    try (DaemonProcess d = DaemonProcess.start(state, socket);
        DaemonClient c = new DaemonClient(socket)) {
      // Adaptive pools are on by default but need demand: one run makes none.
      assertEquals("\"Completed\"", Submissions.submit(c, WRITER, GRANTS).getOutcomeJson());
      assertTrue(pool(c, WRITER).isEmpty());
      d.stop();
    }
    String unknown = "ab".repeat(32);
    Path cfg =
        config(
            "{\"pools\":[{\"module\":\""
                + Blake3.hex(WRITER)
                + "\",\"min_idle\":2,\"max_idle\":4,\"ttl_ms\":300000},"
                + "{\"module\":\"b3:"
                + unknown
                + "\",\"min_idle\":1}]}");
    try (DaemonProcess d = DaemonProcess.start(state, socket, "--config", cfg.toString());
        DaemonClient c = new DaemonClient(socket)) {
      await("two warm instances", () -> pool(c, WRITER).map(p -> p.getIdle() == 2).orElse(false));
      assertTrue(pool(c, WRITER).orElseThrow().getConfigured());
      assertTrue(d.log().contains(unknown) && d.log().contains("does not hold"), d.log());
      assertEquals(1, pools(c, 0).getPoolsCount());
      // The node's grant cap shape is what a configured pool warms: a run asking for as much hits.
      SubmitReply warm = Submissions.submit(c, WRITER, grants(1L << 40));
      assertEquals("\"Completed\"", warm.getOutcomeJson());
      assertFalse(warm.getClaim().isEmpty());
    }
    // Unknown keys are refused with their JSON path; the daemon does not start.
    Path bad = config("{\"pools\":[{\"module\":\"" + unknown + "\",\"min\":1}]}");
    String said = DaemonProcess.refusedStart(dir.resolve("s3"), "--config", bad.toString());
    assertTrue(said.contains("$.pools[0]") && said.contains("min"), said);
  }
}
