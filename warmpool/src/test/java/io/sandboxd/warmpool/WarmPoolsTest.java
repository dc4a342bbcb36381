package io.sandboxd.warmpool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.WarmpoolClaim;
import io.sandboxd.attest.WarmpoolEvict;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.EnergyModel;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.InstanceShape;
import io.sandboxd.executor.PreparedInstance;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.executor.UnitRequest;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** Claims, cold fallback, key and shape matching, evictions and their energy, without a daemon. */
class WarmPoolsTest {
  static final UnitCompiler COMPILER = new UnitCompiler(16);
  static final Executor EXECUTOR = new Executor(1, EnergyModel.estimate(10_000), 10_000);

  // Fails (returns 7) if memory[100] is not zero at start, then leaves 42 there.
  static final String WRITES_MEMORY =
      """
      (module
        (memory 1 1)
        (func (export "run") (result i32)
          (if (i32.ne (i32.load (i32.const 100)) (i32.const 0))
            (then (return (i32.const 7))))
          (i32.store (i32.const 100) (i32.const 42))
          (i32.const 0)))
      """;

  static final String OTHER =
      "(module (memory 1 1) (func (export \"run\") (result i32) i32.const 0))";

  static final CompiledUnit UNIT = COMPILER.compile(Wat2Wasm.parse(WRITES_MEMORY));
  static final CompiledUnit OTHER_UNIT = COMPILER.compile(Wat2Wasm.parse(OTHER));
  static final InstanceShape SHAPE = new InstanceShape(1, 1 << 20);
  static final long INSTANCE_BYTES = 65_536;

  @AfterAll
  static void close() {
    EXECUTOR.close();
  }

  static Grants grants(long memoryBytes) {
    String json =
        "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000000,\"cpu_time_ms\":5000,"
            + "\"memory_bytes\":"
            + memoryBytes
            + "},\"storage\":{\"read\":[],\"write\":[],\"delete\":[]},"
            + "\"network\":{\"outbound\":[],\"inbound\":false},"
            + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
            + "\"host\":{\"logging\":false,\"clock\":false,\"random\":false,\"inference\":false}}";
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  /** Pools on a hand-moved clock, recording evictions. */
  static final class Fixture {
    final AtomicLong now = new AtomicLong(1_000_000);
    // The wall clock, moved with `now` by ticks and apart from it by a test that steps it.
    final AtomicLong wall = new AtomicLong(1_700_000_000_000L);
    final List<WarmpoolEvict> evicted = new ArrayList<>();
    final WarmPools pools;

    Fixture(PoolPolicy policy, long idleMw) {
      pools =
          new WarmPools(
              policy,
              IdlePower.fixed(idleMw, Provenance.Estimator),
              10_000,
              Provenance.Estimator,
              evicted::addAll,
              new PoolClock(now::get, wall::get));
    }

    /** {@code n} refill passes, the clock moved on {@code stepMs} before each. */
    void ticks(int n, long stepMs) {
      for (int i = 0; i < n; i++) {
        now.addAndGet(stepMs);
        wall.addAndGet(stepMs);
        pools.tick();
      }
    }

    Fixture configured(CompiledUnit unit, int min, int max, long ttl) {
      List<String> warnings =
          pools.configure(
              a -> a.equals(unit.address()) ? Optional.of(unit) : Optional.empty(), u -> SHAPE);
      assertEquals(List.of(), warnings);
      return this;
    }
  }

  static PoolPolicy policy(
      List<PoolPolicy.Configured> configured, PoolPolicy.Adaptive adaptive, long ceiling) {
    // The node's memory is one instance: the whole idle draw goes to a single idle instance.
    return new PoolPolicy(configured, adaptive, ceiling, INSTANCE_BYTES, 100);
  }

  static Fixture oneModulePool(int min, int max, long ttl, long idleMw) {
    return new Fixture(
            policy(
                List.of(new PoolPolicy.Configured(UNIT.address(), min, max, ttl)),
                PoolPolicy.Adaptive.OFF,
                1L << 30),
            idleMw)
        .configured(UNIT, min, max, ttl);
  }

  @Test
  void claimAfterSixtySecondsAtFiveWattsCarriesThreeHundredJoules() {
    // WIRE.md §5 check 22: 60 s warm at a 5 W idle draw is 300 000 000 µJ.
    Fixture f = oneModulePool(1, 1, 600_000, 5_000);
    f.pools.tick();
    assertEquals(1, f.pools.stats().get(0).idle());
    long warmed = f.wall.get();
    f.ticks(60, 1_000);
    Claim c = f.pools.claim(PoolKey.s2(UNIT.address()), UNIT, SHAPE, "run-1");
    assertTrue(c.warm());
    WarmpoolClaim r = c.record().orElseThrow();
    assertEquals(300_000_000L, r.accruedIdleUj());
    assertEquals(300_000_000L, c.idleUj());
    assertEquals(warmed, r.warmedMs());
    assertEquals(warmed + 60_000, r.claimedMs());
    assertEquals("run-1", r.runId());
    assertEquals("S2", r.tier());
    assertEquals(null, r.manifest());
    assertEquals(PoolKey.s2(UNIT.address()).id(), r.pool());
    PoolStats s = f.pools.stats().get(0);
    assertEquals(1, s.claims());
    assertEquals(1, s.hits());
    assertEquals(0, s.misses());
    assertEquals(300_000_000L, s.idleUj());
    // The record survives its own strict parser.
    assertEquals(r, WarmpoolClaim.fromCore(r.toCore()));
  }

  @Test
  void aWallClockThatStepsChangesNeitherTheIdleEnergyNorTheTtlOnlyTheStamps() {
    Fixture f = oneModulePool(2, 2, 120_000, 5_000);
    f.pools.tick();
    assertEquals(2, f.pools.stats().get(0).idle());
    f.ticks(60, 1_000);
    // An NTP step or a resumed VM: the wall clock jumps an hour; 60 s have passed, no more.
    f.wall.addAndGet(3_600_000);
    f.pools.tick();
    assertEquals(2, f.pools.stats().get(0).idle(), "no ttl passed: " + f.evicted);
    Claim c = f.pools.claim(PoolKey.s2(UNIT.address()), UNIT, SHAPE, "run-1");
    WarmpoolClaim r = c.record().orElseThrow();
    assertEquals(300_000_000L, r.accruedIdleUj(), "60 s at 5 W, not an hour");
    assertEquals(f.wall.get(), r.claimedMs());
    assertEquals(r.claimedMs() - 60_000, r.warmedMs());
    // Back two hours: stamps stay apart by what was measured, and the ttl still counts 120 s.
    f.wall.addAndGet(-7_200_000);
    f.ticks(59, 1_000);
    assertEquals(List.of(), f.evicted);
    for (int i = 0; i < 2 && f.evicted.isEmpty(); i++) {
      f.ticks(1, 1_000);
    }
    assertEquals(1, f.evicted.size(), f.evicted.toString());
    WarmpoolEvict e = f.evicted.get(0);
    assertEquals(WarmpoolEvict.Reason.Ttl, e.reason());
    assertEquals(f.wall.get(), e.evictedMs());
    assertTrue(e.evictedMs() - e.warmedMs() >= 120_000, e.toString());
  }

  @Test
  void aBusyNodeGetsOneNewInstanceAPassAndTheRestLater() {
    Fixture f = oneModulePool(4, 4, 600_000, 5_000);
    java.util.concurrent.atomic.AtomicBoolean busy =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    f.pools.busyWhen(busy::get);
    f.pools.tick();
    assertEquals(WarmPools.BUSY_FILLS_PER_PASS, f.pools.stats().get(0).idle());
    f.pools.tick();
    assertEquals(2 * WarmPools.BUSY_FILLS_PER_PASS, f.pools.stats().get(0).idle());
    // Load gone: the next pass fills to the minimum at once.
    busy.set(false);
    f.pools.tick();
    assertEquals(4, f.pools.stats().get(0).idle());
  }

  @Test
  void emptyPoolIsAColdMissAndAUsedInstanceIsNeverServedAgain() {
    Fixture f = oneModulePool(1, 1, 600_000, 5_000);
    PoolKey key = PoolKey.s2(UNIT.address());
    Claim cold = f.pools.claim(key, UNIT, SHAPE, "r0");
    assertFalse(cold.warm());
    assertEquals(0, cold.idleUj());
    f.pools.tick();
    Claim first = f.pools.claim(key, UNIT, SHAPE, "r1");
    assertTrue(first.warm());
    PreparedInstance used = first.instance().orElseThrow();
    // The claim took the instance: it cannot serve a second run.
    assertFalse(used.take());
    Claim second = f.pools.claim(key, UNIT, SHAPE, "r2");
    assertFalse(second.warm());
    f.pools.tick();
    Claim third = f.pools.claim(key, UNIT, SHAPE, "r3");
    assertTrue(third.warm());
    assertNotSame(used, third.instance().orElseThrow());
    PoolStats s = f.pools.stats().get(0);
    assertEquals(4, s.claims());
    assertEquals(2, s.hits());
    assertEquals(2, s.misses());
  }

  @Test
  void aClaimForAnotherManifestOrTierIsNeverServedFromThePool() {
    Fixture f = oneModulePool(2, 2, 600_000, 5_000);
    f.pools.tick();
    String manifest = "ab".repeat(32);
    Claim withManifest =
        f.pools.claim(new PoolKey(UNIT.address(), Optional.of(manifest), "S2"), UNIT, SHAPE, "r1");
    Claim otherTier =
        f.pools.claim(new PoolKey(UNIT.address(), Optional.empty(), "S3"), UNIT, SHAPE, "r2");
    assertFalse(withManifest.warm());
    assertFalse(otherTier.warm());
    PoolStats s = f.pools.stats().get(0);
    assertEquals(2, s.idle());
    assertEquals(0, s.claims());
    // A key naming another module than the unit is refused outright.
    assertThrows(
        IllegalArgumentException.class,
        () -> f.pools.claim(PoolKey.s2(OTHER_UNIT.address()), UNIT, SHAPE, "r3"));
  }

  @Test
  void otherMemoryLimitsDrainThePoolAsDriftAndStartCold() {
    Fixture f = oneModulePool(2, 2, 600_000, 5_000);
    f.pools.tick();
    InstanceShape smaller = new InstanceShape(1, 1 << 19);
    Claim c = f.pools.claim(PoolKey.s2(UNIT.address()), UNIT, smaller, "r1");
    assertFalse(c.warm());
    assertEquals(2, f.evicted.size());
    for (WarmpoolEvict e : f.evicted) {
      assertEquals(WarmpoolEvict.Reason.Drift, e.reason());
      assertTrue(e.overheadUj() > 0, "overhead " + e.overheadUj());
    }
    // The pool now makes instances of the limits runs ask for.
    f.pools.tick();
    assertTrue(f.pools.claim(PoolKey.s2(UNIT.address()), UNIT, smaller, "r2").warm());
  }

  @Test
  void ttlEvictionRecordsWarmUpPlusIdleEnergy() {
    Fixture f = oneModulePool(1, 1, 10_000, 5_000);
    f.pools.tick();
    f.now.addAndGet(10_000);
    f.pools.tick();
    assertEquals(1, f.evicted.size());
    WarmpoolEvict e = f.evicted.get(0);
    assertEquals(WarmpoolEvict.Reason.Ttl, e.reason());
    // 10 s at 5 W is 50 000 000 µJ of idle, plus the CPU it took to make the instance.
    assertTrue(e.overheadUj() > 50_000_000L, "overhead " + e.overheadUj());
    assertEquals(e.warmedMs() + 10_000, e.evictedMs());
    assertEquals(e, WarmpoolEvict.fromCore(e.toCore()));
    // The refill made a fresh one in its place.
    assertEquals(1, f.pools.stats().get(0).idle());
    assertEquals(1L, f.pools.stats().get(0).evictions().get(WarmpoolEvict.Reason.Ttl));
  }

  @Test
  void evictionOverheadIsPositiveEvenWithNoIdleDraw() {
    Fixture f = oneModulePool(1, 1, 600_000, 0);
    f.pools.tick();
    f.pools.close();
    assertEquals(1, f.evicted.size());
    assertEquals(WarmpoolEvict.Reason.Shutdown, f.evicted.get(0).reason());
    // Making the instance cost CPU: the eviction never records zero.
    assertTrue(f.evicted.get(0).overheadUj() > 0);
  }

  @Test
  void theCeilingEvictsThePoolWithOlderDemandForOneBelowItsMinimum() {
    Fixture f =
        new Fixture(
            policy(
                List.of(new PoolPolicy.Configured(UNIT.address(), 1, 1, 600_000)),
                new PoolPolicy.Adaptive(1, 60_000, 1, 1, 600_000),
                INSTANCE_BYTES),
            5_000);
    f.configured(UNIT, 1, 1, 600_000);
    f.pools.tick();
    assertEquals(INSTANCE_BYTES, f.pools.idleBytes());
    PoolKey other = PoolKey.s2(OTHER_UNIT.address());
    f.now.addAndGet(1);
    assertFalse(f.pools.claim(other, OTHER_UNIT, SHAPE, "a").warm());
    f.now.addAndGet(1);
    // The second submission within the window makes the adaptive pool; it starts cold.
    assertFalse(f.pools.claim(other, OTHER_UNIT, SHAPE, "b").warm());
    f.pools.tick();
    assertEquals(1, f.evicted.size());
    assertEquals(WarmpoolEvict.Reason.Capacity, f.evicted.get(0).reason());
    assertEquals(PoolKey.s2(UNIT.address()).id(), f.evicted.get(0).pool());
    assertEquals(INSTANCE_BYTES, f.pools.idleBytes());
    assertTrue(f.pools.claim(other, OTHER_UNIT, SHAPE, "c").warm());
    // The configured pool, with the older demand, does not take the room back.
    f.pools.tick();
    assertEquals(1, f.evicted.size());
  }

  @Test
  void adaptivePoolsShrinkBackWithoutDemand() {
    Fixture f =
        new Fixture(
            policy(List.of(), new PoolPolicy.Adaptive(1, 5_000, 1, 2, 600_000), 1L << 30), 1);
    PoolKey key = PoolKey.s2(UNIT.address());
    f.pools.claim(key, UNIT, SHAPE, "a");
    assertEquals(0, f.pools.stats().size());
    f.pools.claim(key, UNIT, SHAPE, "b");
    assertEquals(1, f.pools.stats().size());
    f.pools.tick();
    assertTrue(f.pools.stats().get(0).idle() >= 1);
    f.now.addAndGet(5_001);
    f.pools.tick();
    assertEquals(0, f.pools.stats().size());
    assertTrue(f.evicted.stream().allMatch(e -> e.reason() == WarmpoolEvict.Reason.Capacity));
    assertFalse(f.evicted.isEmpty());
  }

  /** Warm claims out of {@code n} submissions of UNIT, a refill pass after each. */
  private static int warmClaims(Fixture f, int n) {
    PoolKey key = PoolKey.s2(UNIT.address());
    int warm = 0;
    for (int i = 0; i < n; i++) {
      if (f.pools.claim(key, UNIT, SHAPE, "r" + i).warm()) {
        warm++;
      }
      f.pools.tick();
    }
    return warm;
  }

  /**
   * Pools of 2 idle (the operator's {@code configured}, adaptive ones weighed on {@code floorUs}).
   */
  private static Fixture twoIdle(List<PoolPolicy.Configured> configured, long floorUs) {
    return new Fixture(
        policy(configured, new PoolPolicy.Adaptive(1, 60_000, 2, 2, 600_000, floorUs), 1L << 30),
        1);
  }

  @Test
  void anAdaptivePoolWhoseInstancesCostLessThanTheFloorStopsMakingThem() {
    // A floor of a minute of CPU: every instance is cheaper. The pool makes WEIGHED_AFTER, its
    // runs claim those, then they instantiate their own; the pool says why.
    Fixture cheap = twoIdle(List.of(), 60_000_000);
    assertEquals(WarmPools.WEIGHED_AFTER, warmClaims(cheap, 16));
    PoolStats stats = cheap.pools.stats().get(0);
    assertEquals(0, stats.idle());
    assertTrue(stats.notPoolable().contains("min_warmup_us 60000000"), stats.notPoolable());
    // No floor: every run after the one that made the pool claims warm.
    Fixture unweighed = twoIdle(List.of(), 0);
    assertEquals(14, warmClaims(unweighed, 16)); // the pool is made by the second, cold
    assertEquals("", unweighed.pools.stats().get(0).notPoolable());
  }

  @Test
  void aConfiguredPoolIsNeverWeighed() {
    Fixture f =
        twoIdle(List.of(new PoolPolicy.Configured(UNIT.address(), 2, 2, 600_000)), 60_000_000);
    f.configured(UNIT, 2, 2, 600_000);
    f.pools.tick();
    assertEquals(16, warmClaims(f, 16));
  }

  @Test
  void configuringAModuleTheNodeDoesNotHoldWarnsAndLeavesItOut() {
    Fixture f =
        new Fixture(
            policy(
                List.of(new PoolPolicy.Configured("cd".repeat(32), 1, 2, 1_000)),
                PoolPolicy.Adaptive.OFF,
                1L << 30),
            1);
    List<String> warnings = f.pools.configure(a -> Optional.empty(), u -> SHAPE);
    assertEquals(1, warnings.size());
    assertTrue(warnings.get(0).contains("cd".repeat(32)), warnings.get(0));
    assertEquals(0, f.pools.stats().size());
  }

  @Test
  void noStateLeaksBetweenRunsOnWarmInstances() {
    Fixture f = oneModulePool(2, 2, 600_000, 5_000);
    f.pools.tick();
    Grants g = grants(1 << 20);
    InstanceShape shape = EXECUTOR.shape(UNIT, g.compute());
    // The executor's shape for this grant is the pool's: 1 page, 1 MiB.
    assertEquals(SHAPE, shape);
    for (int i = 0; i < 4; i++) {
      Claim c = f.pools.claim(PoolKey.s2(UNIT.address()), UNIT, shape, "r" + i);
      ExecutionResult r =
          EXECUTOR.execute(new UnitRequest("r" + i, UNIT, "run", g), c.instance().orElse(null));
      assertEquals(new Outcome.Completed(), r.outcome(), "run " + i + " warm=" + c.warm());
      if (i % 2 == 1) {
        f.pools.tick();
      }
    }
    assertTrue(f.pools.stats().get(0).hits() >= 2);
  }

  @Test
  void anInstanceRunsOnceOnlyAndOnlyForItsOwnUnitAndShape() {
    Grants g = grants(1 << 20);
    PreparedInstance p = PreparedInstance.prepare(UNIT, SHAPE);
    assertThrows(
        IllegalArgumentException.class,
        () -> EXECUTOR.execute(new UnitRequest("x", OTHER_UNIT, "run", g), p));
    assertThrows(
        IllegalArgumentException.class,
        () -> EXECUTOR.execute(new UnitRequest("x", UNIT, "run", grants(1 << 19)), p));
    assertEquals(
        new Outcome.Completed(),
        EXECUTOR.execute(new UnitRequest("x", UNIT, "run", g), p).outcome());
    assertThrows(
        IllegalArgumentException.class,
        () -> EXECUTOR.execute(new UnitRequest("y", UNIT, "run", g), p));
  }

  /** The nice value (field 19 of /proc/self/task/TID/stat) of the thread named {@code name}. */
  private static java.util.OptionalInt niceOf(String name) throws java.io.IOException {
    try (var tasks = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/task"))) {
      for (java.nio.file.Path t : tasks.toList()) {
        if (java.nio.file.Files.readString(t.resolve("comm")).strip().equals(name)) {
          String stat = java.nio.file.Files.readString(t.resolve("stat"));
          // comm may hold spaces: count the fields after its closing parenthesis (state is 3).
          String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          return java.util.OptionalInt.of(Integer.parseInt(f[19 - 3]));
        }
      }
    }
    return java.util.OptionalInt.empty();
  }

  @Test
  void theRefillThreadRunsBelowTheRunsInTheKernelsEyes() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        java.nio.file.Files.isDirectory(java.nio.file.Path.of("/proc/self/task")), "Linux /proc");
    Fixture f = oneModulePool(1, 1, 600_000, 5_000);
    assertEquals(java.util.OptionalInt.empty(), niceOf("warmpool-refill"));
    f.pools.start();
    try {
      java.util.OptionalInt nice = java.util.OptionalInt.empty();
      for (int i = 0; i < 500 && (nice.isEmpty() || nice.getAsInt() == 0); i++) {
        Thread.sleep(10);
        nice = niceOf("warmpool-refill");
      }
      assertEquals(java.util.OptionalInt.of(WarmPools.REFILL_NICE), nice);
      // The rest of the process keeps its own: only the refill thread was lowered.
      String self = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/thread-self/stat"));
      assertEquals("0", self.substring(self.lastIndexOf(')') + 2).split(" ")[19 - 3]);
    } finally {
      f.pools.close();
    }
  }
}
