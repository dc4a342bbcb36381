package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class FactoryCacheTest {
  private static byte[] module(int value) {
    return WasmWriter.runModule(0, WasmWriter.returning(value));
  }

  @Test
  void aRepeatedModuleIsCompiledOnceAndCountedAsAHit() {
    UnitCompiler compiler = new UnitCompiler(new FactoryCache(4), CompileLimits.defaults());
    UnitCompiler.Compilation first = compiler.compileMetered(module(1));
    UnitCompiler.Compilation again = compiler.compileMetered(module(1));
    assertSame(first.unit(), again.unit());
    assertTrue(first.cpuNanos() > 0, "the first compilation costs CPU time");
    assertEquals(0, again.cpuNanos());
    FactoryCache.Stats s = compiler.factories().stats();
    assertEquals(1, s.hits());
    assertEquals(1, s.misses());
    assertEquals(1, s.entries());
  }

  @Test
  void theLeastRecentlyUsedFactoryIsEvictedAndRebuiltOnAMiss() {
    UnitCompiler compiler = new UnitCompiler(new FactoryCache(2), CompileLimits.defaults());
    CompiledUnit a = compiler.compile(module(1));
    compiler.compile(module(2));
    compiler.compile(module(1)); // a is now the most recently used
    compiler.compile(module(3)); // evicts 2, not a
    FactoryCache cache = compiler.factories();
    assertTrue(cache.contains(a.address()));
    assertFalse(cache.contains(UnitCompiler.addressOf(module(2))));
    assertTrue(cache.contains(UnitCompiler.addressOf(module(3))));
    assertEquals(2, cache.stats().entries());
    assertEquals(1, cache.stats().evictions());
    // a stayed: the same compiled unit, no recompile (and 3 is now the least recently used).
    assertSame(a, compiler.compile(module(1)));
    long misses = cache.stats().misses();
    CompiledUnit rebuilt = compiler.compile(module(2));
    assertEquals(misses + 1, cache.stats().misses());
    assertEquals(UnitCompiler.addressOf(module(2)), rebuilt.address());
    assertFalse(cache.contains(UnitCompiler.addressOf(module(3))));
    assertTrue(cache.contains(a.address()));
  }

  @Test
  void aRaceKeepsTheFirstUnitCached() {
    FactoryCache cache = new FactoryCache(2);
    CompiledUnit one = UnitCompiler.build("x", module(1), CompileLimits.defaults());
    CompiledUnit two = UnitCompiler.build("x", module(1), CompileLimits.defaults());
    assertNotSame(one, two);
    assertSame(one, cache.put(one));
    assertSame(one, cache.put(two));
  }
}
