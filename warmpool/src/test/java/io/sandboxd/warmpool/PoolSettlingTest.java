package io.sandboxd.warmpool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.executor.CompiledUnit;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 24 items 1 and 6: no guest code runs while a pool prepares instances, a failing preparation
 * backs off and then gives up, and pools whose minimums cannot fit settle instead of evicting one
 * another.
 */
class PoolSettlingTest {
  static final CompiledUnit SPINS_AT_START =
      WarmPoolsTest.COMPILER.compile(
          Wat2Wasm.parse(
              "(module (memory 1 1) (func $s (loop br 0)) (start $s)"
                  + " (func (export \"run\") (result i32) i32.const 0))"));
  static final CompiledUnit GROWS_AT_START =
      WarmPoolsTest.COMPILER.compile(
          Wat2Wasm.parse(
              "(module (memory 1 4) (func $s (drop (memory.grow (i32.const 3)))) (start $s)"
                  + " (func (export \"run\") (result i32) i32.const 0))"));
  // Needs two pages at start; the shape allows one: every preparation fails.
  static final CompiledUnit TOO_BIG =
      WarmPoolsTest.COMPILER.compile(
          Wat2Wasm.parse("(module (memory 2 2) (func (export \"run\") (result i32) i32.const 0))"));

  private static WarmPoolsTest.Fixture fixture(
      List<PoolPolicy.Configured> configured, PoolPolicy.Adaptive adaptive, long ceiling) {
    return new WarmPoolsTest.Fixture(WarmPoolsTest.policy(configured, adaptive, ceiling), 5_000);
  }

  private static List<String> configure(WarmPoolsTest.Fixture f, CompiledUnit... units) {
    return f.pools.configure(
        a -> {
          for (CompiledUnit u : units) {
            if (u.address().equals(a)) {
              return Optional.of(u);
            }
          }
          return Optional.empty();
        },
        u -> WarmPoolsTest.SHAPE);
  }

  @Test
  @Timeout(value = 20, unit = TimeUnit.SECONDS)
  void aStartFunctionNeverRunsOutsideARunConfiguredOrAdaptive() {
    WarmPoolsTest.Fixture f =
        fixture(
            List.of(new PoolPolicy.Configured(SPINS_AT_START.address(), 2, 2, 600_000)),
            new PoolPolicy.Adaptive(1, 60_000, 1, 2, 600_000),
            1L << 30);
    List<String> warnings = configure(f, SPINS_AT_START);
    assertTrue(warnings.get(0).contains("start function"), warnings.toString());
    for (int i = 0; i < 5; i++) {
      f.pools.tick(); // would spin for ever if the start function ran here
    }
    PoolStats s = f.pools.stats().get(0);
    assertEquals(0, s.idle());
    assertTrue(s.notPoolable().contains("start function"), s.notPoolable());
    // An adaptive pool for a module whose start function grows memory: demand, but no instance.
    PoolKey grows = PoolKey.s2(GROWS_AT_START.address());
    for (String run : List.of("a", "b", "c")) {
      assertFalse(f.pools.claim(grows, GROWS_AT_START, WarmPoolsTest.SHAPE, run).warm());
    }
    f.pools.tick();
    PoolStats g = f.pools.stats().get(1);
    assertEquals(0, g.idle());
    assertTrue(g.notPoolable().contains("start function"), g.notPoolable());
    assertFalse(f.pools.claim(grows, GROWS_AT_START, WarmPoolsTest.SHAPE, "d").warm());
    assertEquals(0, f.pools.idleBytes());
  }

  @Test
  void aFailingPreparationBacksOffThenMarksTheModuleNotPoolable() {
    WarmPoolsTest.Fixture f =
        fixture(
            List.of(new PoolPolicy.Configured(TOO_BIG.address(), 1, 1, 600_000)),
            PoolPolicy.Adaptive.OFF,
            1L << 30);
    configure(f, TOO_BIG);
    // Without time passing, a hundred ticks are one attempt: still poolable.
    f.ticks(100, 0);
    assertEquals("", f.pools.stats().get(0).notPoolable());
    f.ticks(WarmPools.MAX_FAILURES, WarmPools.MAX_BACKOFF_MS);
    String why = f.pools.stats().get(0).notPoolable();
    assertTrue(why.contains("failed " + WarmPools.MAX_FAILURES + " times"), why);
    assertTrue(why.contains("pages"), why);
  }

  @Test
  void minimumsThatCannotFitAreCappedSayingSoAndTheNodeSettles() {
    CompiledUnit a = WarmPoolsTest.UNIT;
    CompiledUnit b = WarmPoolsTest.OTHER_UNIT;
    WarmPoolsTest.Fixture f =
        fixture(
            List.of(
                new PoolPolicy.Configured(a.address(), 3, 3, 600_000),
                new PoolPolicy.Configured(b.address(), 3, 3, 600_000)),
            PoolPolicy.Adaptive.OFF,
            4 * WarmPoolsTest.INSTANCE_BYTES);
    List<String> warnings = configure(f, a, b);
    assertEquals(1, warnings.size(), warnings.toString());
    assertTrue(warnings.get(0).contains("min_idle 3 capped to 1"), warnings.get(0));
    f.ticks(100, 100);
    assertEquals(List.of(), f.evicted);
    assertEquals(4 * WarmPoolsTest.INSTANCE_BYTES, f.pools.idleBytes());
  }

  @Test
  void adaptivePoolsWhoseMinimumsDoNotFitStopEvictingWhenDemandStops() {
    CompiledUnit a = WarmPoolsTest.UNIT;
    CompiledUnit b = WarmPoolsTest.OTHER_UNIT;
    WarmPoolsTest.Fixture f =
        fixture(
            List.of(),
            new PoolPolicy.Adaptive(1, 600_000, 2, 2, 600_000),
            3 * WarmPoolsTest.INSTANCE_BYTES);
    for (CompiledUnit u : List.of(a, b, a, b)) {
      f.now.addAndGet(1);
      f.pools.claim(PoolKey.s2(u.address()), u, WarmPoolsTest.SHAPE, "r");
    }
    f.pools.tick();
    f.pools.tick();
    int settled = f.evicted.size();
    // No client activity: no evictions at all (no TTL is reached in these 20 s).
    f.ticks(200, 100);
    assertEquals(settled, f.evicted.size(), f.evicted.toString());
    assertTrue(f.pools.idleBytes() <= 3 * WarmPoolsTest.INSTANCE_BYTES);
  }
}
