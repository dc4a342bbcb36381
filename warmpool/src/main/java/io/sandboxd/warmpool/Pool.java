package io.sandboxd.warmpool;

import io.sandboxd.attest.WarmpoolEvict;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.InstanceShape;
import io.sandboxd.executor.PreparedInstance;
import java.util.ArrayDeque;
import java.util.EnumMap;
import java.util.Map;

/** One pool's idle instances and counters; guarded by its {@link WarmPools}. */
final class Pool {
  final PoolKey key;
  final boolean configured;
  CompiledUnit unit;
  InstanceShape shape;
  int minIdle;
  int maxIdle;
  long ttlMs;
  // Oldest first: claims take the oldest, so every instance gets used before its TTL if it can.
  final ArrayDeque<Idle> idle = new ArrayDeque<>();
  // Instances being made for this pool right now (outside the lock).
  int inFlight;
  long claims;
  long hits;
  long misses;
  long idleUjSettled;
  long lastDemandMs;
  // Claims since the last tick, and the largest such count within the adaptive window.
  long claimsThisTick;
  // Why the pool makes no instances (its module runs guest code when prepared, or preparation kept
  // failing); null while it is poolable.
  String notPoolable;
  // Preparations failed in a row, and when the next may be tried (backoff).
  int failures;
  long retryAtMs;
  // An adaptive pool's warm-ups so far and the least CPU one took (ns): what its instances save.
  int warmups;
  long fastestWarmupNanos = Long.MAX_VALUE;
  // Heap bytes the last instance made actually held (0 before the first): the estimate after it.
  long madeBytes;
  final Map<WarmpoolEvict.Reason, Long> evictions = new EnumMap<>(WarmpoolEvict.Reason.class);

  Pool(
      PoolKey key,
      boolean configured,
      CompiledUnit unit,
      InstanceShape shape,
      int minIdle,
      int maxIdle,
      long ttlMs) {
    this.key = key;
    this.configured = configured;
    this.unit = unit;
    this.shape = shape;
    this.minIdle = minIdle;
    this.maxIdle = maxIdle;
    this.ttlMs = ttlMs;
  }

  /** Heap bytes one instance of this pool holds when made. */
  long instanceBytes() {
    long estimate =
        unit.footprint().staticBytes()
            + (long) unit.initialPages() * com.dylibso.chicory.runtime.Memory.PAGE_SIZE;
    // An instance that came out larger than estimated would overshoot the ceiling at every fill
    // and be evicted at the next tick, for ever: the size seen is the size planned for.
    return Math.max(estimate, madeBytes);
  }

  /** How many idle instances the pool aims for now: its minimum plus recent demand, at most max. */
  int target() {
    long want = minIdle + claimsThisTick;
    return (int) Math.max(minIdle, Math.min(maxIdle, want));
  }

  /** One instance waiting in the pool, and the energy it has cost so far. */
  static final class Idle {
    final PreparedInstance instance;
    final String id;
    // On the pools' elapsed clock (PoolClock), as is accruedToMs: records get wall stamps apart.
    final long warmedMs;
    final long warmupUj;
    final long bytes;
    final IdleEnergy energy;
    long accruedToMs;

    Idle(
        PreparedInstance instance,
        String id,
        long warmedMs,
        long warmupUj,
        long bytes,
        long nodeBytes) {
      this.instance = instance;
      this.id = id;
      this.warmedMs = warmedMs;
      this.warmupUj = warmupUj;
      this.bytes = bytes;
      this.energy = new IdleEnergy(nodeBytes);
      this.accruedToMs = warmedMs;
    }

    void accrueTo(long nowMs, long milliwatts) {
      if (nowMs > accruedToMs) {
        energy.accrue(milliwatts, bytes, nowMs - accruedToMs);
        accruedToMs = nowMs;
      }
    }
  }
}
