package io.sandboxd.warmpool;

import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.WarmpoolClaim;
import io.sandboxd.attest.WarmpoolEvict;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.InstanceShape;
import io.sandboxd.executor.PreparedInstance;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The node's warm pools: instances made in advance, never run, each served to exactly one run whose
 * module, environment manifest, tier and memory limits are the pool's. A refill thread keeps each
 * pool between its minimum and maximum idle count under a node-wide memory ceiling, accrues each
 * idle instance's share of the node's idle power, and evicts (with a record of the energy the
 * instance cost) on TTL, capacity, drift and shutdown. A claim on an empty pool is a miss: the run
 * instantiates cold.
 */
public final class WarmPools implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(WarmPools.class.getName());

  /** Most modules whose submissions are counted for adaptive pools at once. */
  static final int MAX_TRACKED_MODULES = 4096;

  /** Most pools at once (configured and adaptive). */
  static final int MAX_POOLS = 1024;

  /** Where eviction records go: the daemon signs and stores them. */
  public interface Evictions {
    /** Records of instances evicted together (stored in one transaction). */
    void evicted(List<WarmpoolEvict> records);
  }

  private final PoolPolicy policy;
  private final IdlePower idlePower;
  private final long cpuMilliwatts;
  private final Provenance cpuProvenance;
  private final Evictions sink;
  private final PoolClock clock;
  private final Map<PoolKey, Pool> pools = new LinkedHashMap<>();
  // Submission times per module within the adaptive window, for deciding who gets a pool.
  private final Map<String, ArrayDeque<Long>> demand = new LinkedHashMap<>(16, 0.75f, true);
  private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
  private final SecureRandom random = new SecureRandom();
  private volatile Thread refill;
  private volatile boolean closed;

  /**
   * Pools under {@code policy}; warm-up and teardown CPU are priced at {@code cpuMilliwatts} (the
   * estimator's CPU draw, labelled {@code cpuProvenance}); evictions go to {@code sink}.
   */
  public WarmPools(
      PoolPolicy policy,
      IdlePower idlePower,
      long cpuMilliwatts,
      Provenance cpuProvenance,
      Evictions sink,
      PoolClock clock) {
    this.policy = policy;
    this.idlePower = idlePower;
    this.cpuMilliwatts = cpuMilliwatts;
    this.cpuProvenance = cpuProvenance;
    this.sink = sink;
    this.clock = clock;
  }

  /**
   * Sets up the operator's pools for the modules {@code units} can compile; returns a warning for
   * each configured module the node does not hold (that pool is left out).
   */
  public List<String> configure(
      Function<String, Optional<CompiledUnit>> units,
      Function<CompiledUnit, InstanceShape> defaultShape) {
    List<String> warnings = new ArrayList<>();
    for (PoolPolicy.Configured c : policy.configured()) {
      Optional<CompiledUnit> unit;
      try {
        unit = units.apply(c.module());
      } catch (RuntimeException e) {
        warnings.add("pool for module " + c.module() + " left out: " + e.getMessage());
        continue;
      }
      if (unit.isEmpty()) {
        warnings.add("pool for module " + c.module() + " left out: the node does not hold it");
        continue;
      }
      synchronized (this) {
        PoolKey key = PoolKey.s2(c.module());
        Pool pool =
            new Pool(
                key,
                true,
                unit.get(),
                defaultShape.apply(unit.get()),
                c.minIdle(),
                c.maxIdle(),
                c.ttlMs());
        pool.notPoolable = unpoolable(unit.get());
        if (pool.notPoolable != null) {
          warnings.add(
              "pool for module " + c.module() + " makes no instances: " + pool.notPoolable);
        } else {
          capMinimum(pool, warnings);
        }
        pools.put(key, pool);
      }
    }
    return warnings;
  }

  /**
   * Claims a warm instance of {@code unit} for run {@code runId}, or returns a cold claim (the run
   * instantiates its own). Only the pool with exactly {@code key} serves, and only an instance of
   * the same {@code shape}; the instance leaves the pool for good.
   */
  public Claim claim(PoolKey key, CompiledUnit unit, InstanceShape shape, String runId) {
    if (!key.module().equals(unit.address())) {
      throw new IllegalArgumentException("claim: the key names another module than the unit");
    }
    List<WarmpoolEvict> evicted = new ArrayList<>();
    Claim claim;
    synchronized (this) {
      long now = clock.elapsedMs().getAsLong();
      Pool pool = pools.get(key);
      if (pool == null) {
        pool = adaptivePool(key, unit, shape, now);
      }
      if (pool == null) {
        return Claim.COLD;
      }
      pool.claims++;
      pool.claimsThisTick++;
      pool.lastDemandMs = now;
      if (!pool.shape.equals(shape) || !pool.unit.address().equals(unit.address())) {
        // Runs now ask for other limits: what the pool holds no longer fits them.
        drain(pool, WarmpoolEvict.Reason.Drift, now, evicted);
        pool.shape = shape;
        pool.unit = unit;
      }
      Pool.Idle idle = pool.idle.pollFirst();
      if (idle == null || !idle.instance.take()) {
        pool.misses++;
        claim = Claim.COLD;
      } else {
        pool.hits++;
        idle.accrueTo(now, idlePower.milliwatts());
        long uj = idle.energy.microjoules();
        long wall = clock.wallMs().getAsLong();
        pool.idleUjSettled = saturatingAdd(pool.idleUjSettled, uj);
        claim =
            new Claim(
                Optional.of(idle.instance),
                Optional.of(
                    new WarmpoolClaim(
                        key.id(),
                        idle.id,
                        stampOf(idle.warmedMs, now, wall),
                        wall,
                        key.tier(),
                        key.manifest().orElse(null),
                        uj,
                        idlePower.provenance(),
                        runId)));
      }
    }
    publish(evicted);
    if (!busy.getAsBoolean()) {
      // Under load the refill waits for its next pass instead of racing the runs for a core.
      wake();
    }
    return claim;
  }

  /** Instances one refill pass makes at most while the node is busy. */
  static final int BUSY_FILLS_PER_PASS = 1;

  private volatile java.util.function.BooleanSupplier busy = () -> false;

  /**
   * Tells the refill when the node is busy (its unit threads all taken): it then makes at most
   * {@link #BUSY_FILLS_PER_PASS} instance a pass and is not woken by claims, so preparing instances
   * never competes with runs for the submit path.
   */
  public void busyWhen(java.util.function.BooleanSupplier busy) {
    this.busy = busy;
  }

  /** Preparations that may fail in a row before the module is marked not poolable. */
  static final int MAX_FAILURES = 5;

  /** The longest wait between two failed preparations. */
  static final long MAX_BACKOFF_MS = 60_000;

  /**
   * Why {@code unit} cannot be pooled, or null: preparing an instance runs its start function (the
   * runtime calls it while instantiating), which would be guest code outside any metered run.
   */
  static String unpoolable(CompiledUnit unit) {
    if (unit.module().startSection().isPresent()) {
      return "the module has a start function, which would run outside a metered run when an"
          + " instance is prepared";
    }
    return null;
  }

  /**
   * Lowers {@code pool}'s minimum so that the configured minimums together fit under the node's
   * ceiling, saying so: minimums that cannot all be held would evict one another for ever.
   */
  private void capMinimum(Pool pool, List<String> warnings) {
    long reserved = 0;
    for (Pool q : pools.values()) {
      if (q.configured && q.notPoolable == null) {
        reserved += (long) q.minIdle * q.instanceBytes();
      }
    }
    long bytes = Math.max(1, pool.instanceBytes());
    long room = Math.max(0, policy.maxIdleBytes() - reserved);
    int fits = (int) Math.min(pool.minIdle, room / bytes);
    if (fits < pool.minIdle) {
      warnings.add(
          "pool for module "
              + pool.key.module()
              + ": min_idle "
              + pool.minIdle
              + " capped to "
              + fits
              + " (each instance needs "
              + bytes
              + " bytes; "
              + room
              + " of pool_limits.max_idle_bytes "
              + policy.maxIdleBytes()
              + " are left for its minimum)");
      pool.minIdle = fits;
    }
  }

  /** Counts a submission of the module and, past the adaptive threshold, makes it a pool. */
  private Pool adaptivePool(PoolKey key, CompiledUnit unit, InstanceShape shape, long now) {
    PoolPolicy.Adaptive a = policy.adaptive();
    if (a.submits() <= 0 || a.maxIdle() <= 0) {
      return null;
    }
    ArrayDeque<Long> times = demand.computeIfAbsent(key.id(), k -> new ArrayDeque<>());
    times.addLast(now);
    while (!times.isEmpty() && now - times.peekFirst() > a.windowMs()) {
      times.pollFirst();
    }
    // Bounded: a client submitting many distinct modules cannot grow what is tracked.
    while (times.size() > a.submits() + 1) {
      times.pollFirst();
    }
    if (demand.size() > MAX_TRACKED_MODULES) {
      Iterator<String> oldest = demand.keySet().iterator();
      oldest.next();
      oldest.remove();
    }
    if (times.size() <= a.submits() || pools.size() >= MAX_POOLS) {
      return null;
    }
    demand.remove(key.id());
    Pool pool = new Pool(key, false, unit, shape, a.minIdle(), a.maxIdle(), a.ttlMs());
    pool.notPoolable = unpoolable(unit);
    pools.put(key, pool);
    return pool;
  }

  /** Every pool's counters, in the order the pools were made. */
  public synchronized List<PoolStats> stats() {
    long now = clock.elapsedMs().getAsLong();
    long mw = idlePower.milliwatts();
    List<PoolStats> out = new ArrayList<>();
    for (Pool p : pools.values()) {
      long idleUj = p.idleUjSettled;
      for (Pool.Idle i : p.idle) {
        i.accrueTo(now, mw);
        idleUj = saturatingAdd(idleUj, i.energy.microjoules());
      }
      out.add(
          new PoolStats(
              p.key,
              p.idle.size(),
              p.claims,
              p.hits,
              p.misses,
              p.evictions,
              idleUj,
              p.configured,
              p.notPoolable == null ? "" : p.notPoolable));
    }
    return out;
  }

  /** The node-wide ceiling on heap bytes held by idle instances. */
  public long maxIdleBytes() {
    return policy.maxIdleBytes();
  }

  /** The idle draw the pools apportion now, with its provenance. */
  public String idlePowerLine() {
    return idlePower.milliwatts() + " mW " + idlePower.provenance();
  }

  /** Heap bytes all idle instances hold now. */
  public synchronized long idleBytes() {
    return idleBytesLocked();
  }

  /**
   * One pass of the refill thread: accrue idle energy, evict past TTL, shrink pools without demand
   * and pools over their maximum or the node's ceiling, then make instances up to each target.
   */
  public void tick() {
    List<WarmpoolEvict> evicted = new ArrayList<>();
    List<Pool> toFill = new ArrayList<>();
    synchronized (this) {
      long now = clock.elapsedMs().getAsLong();
      long mw = idlePower.milliwatts();
      PoolPolicy.Adaptive a = policy.adaptive();
      for (Iterator<Pool> it = pools.values().iterator(); it.hasNext(); ) {
        Pool p = it.next();
        for (Iterator<Pool.Idle> ii = p.idle.iterator(); ii.hasNext(); ) {
          Pool.Idle i = ii.next();
          i.accrueTo(now, mw);
          if (now - i.warmedMs >= p.ttlMs) {
            ii.remove();
            evicted.add(evict(p, i, WarmpoolEvict.Reason.Ttl, now));
          }
        }
        if (!p.configured && now - p.lastDemandMs > a.windowMs()) {
          // No demand for a window: the adaptive pool shrinks back to nothing.
          p.minIdle = 0;
          p.maxIdle = 0;
        }
        while (p.idle.size() > p.maxIdle) {
          evicted.add(evict(p, p.idle.pollFirst(), WarmpoolEvict.Reason.Capacity, now));
        }
        if (!p.configured && p.maxIdle == 0 && p.idle.isEmpty() && p.inFlight == 0) {
          it.remove();
        }
      }
      long used = idleBytesLocked();
      while (used > policy.maxIdleBytes()) {
        Pool.Idle gone = evictForRoom(null, now, evicted);
        if (gone == null) {
          break;
        }
        used -= gone.bytes;
      }
      for (Pool p : pools.values()) {
        if (p.notPoolable != null || now < p.retryAtMs) {
          p.claimsThisTick = 0;
          continue;
        }
        int want = p.target() - p.idle.size() - p.inFlight;
        for (int k = 0; k < want; k++) {
          long bytes = p.instanceBytes();
          // A pool below its minimum may take room from pools that saw demand less recently; an
          // adaptive pool only for demand current this tick, so on an idle node adaptive pools
          // never evict one another to hold minimums that do not fit together.
          while ((p.configured || p.claimsThisTick > 0)
              && used + bytes > policy.maxIdleBytes()
              && p.idle.size() + p.inFlight < p.minIdle) {
            Pool.Idle gone = evictForRoom(p, now, evicted);
            if (gone == null) {
              break;
            }
            used -= gone.bytes;
          }
          if (used + bytes > policy.maxIdleBytes()) {
            break;
          }
          used += bytes;
          p.inFlight++;
          toFill.add(p);
        }
        p.claimsThisTick = 0;
      }
    }
    publish(evicted);
    int made = 0;
    for (Pool p : toFill) {
      if (closed) {
        break;
      }
      if (made >= BUSY_FILLS_PER_PASS && busy.getAsBoolean()) {
        // Left for later passes: give back the places planned for them.
        synchronized (this) {
          p.inFlight--;
        }
        continue;
      }
      fill(p);
      made++;
    }
  }

  /** Makes one instance for {@code p}, outside the lock, pricing the CPU it took. */
  private void fill(Pool p) {
    CompiledUnit unit;
    InstanceShape shape;
    synchronized (this) {
      unit = p.unit;
      shape = p.shape;
    }
    long cpu0 = threads.getCurrentThreadCpuTime();
    PreparedInstance made = null;
    String failure = null;
    try {
      made = PreparedInstance.prepare(unit, shape);
    } catch (RuntimeException | OutOfMemoryError e) {
      failure = e.toString();
    }
    long warmupNanos = threads.getCurrentThreadCpuTime() - cpu0;
    long warmupUj = cpuUj(warmupNanos);
    List<WarmpoolEvict> evicted = new ArrayList<>();
    synchronized (this) {
      p.inFlight--;
      long now = clock.elapsedMs().getAsLong();
      if (made == null) {
        failed(p, failure, now);
        return;
      }
      p.failures = 0;
      p.madeBytes = made.footprintBytes();
      weigh(p, warmupNanos);
      Pool.Idle idle =
          new Pool.Idle(made, newInstanceId(), now, warmupUj, made.footprintBytes(), nodeBytes());
      if (closed || pools.get(p.key) != p || !p.shape.equals(shape)) {
        // Made for limits the pool no longer holds (or a pool that is gone): never served.
        evicted.add(
            evict(
                p, idle, closed ? WarmpoolEvict.Reason.Shutdown : WarmpoolEvict.Reason.Drift, now));
      } else {
        p.idle.addLast(idle);
      }
    }
    publish(evicted);
  }

  /** Warm-ups an adaptive pool makes before it is weighed against what a claim costs. */
  static final int WEIGHED_AFTER = 4;

  /**
   * Counts a warm-up of adaptive pool {@code p}; after {@link #WEIGHED_AFTER} of them, a pool whose
   * fastest took less than the policy's floor makes no more (its idle ones are still claimed): a
   * warm claim signs and stores a record, more work than instantiating such a module on the run's
   * own thread (hello: about 20 µs, against a signature of about 30 µs). The fastest, not the
   * first: the first instantiations of a module in a fresh JVM are the slow ones. Under the lock.
   */
  private void weigh(Pool p, long warmupNanos) {
    long floorUs = policy.adaptive().minWarmupUs();
    if (p.configured || floorUs <= 0 || p.notPoolable != null) {
      return;
    }
    p.fastestWarmupNanos = Math.min(p.fastestWarmupNanos, warmupNanos);
    if (++p.warmups >= WEIGHED_AFTER && p.fastestWarmupNanos < floorUs * 1_000) {
      p.notPoolable =
          "an instance takes "
              + p.fastestWarmupNanos / 1_000
              + " µs of CPU to make, under pool_limits.adaptive.min_warmup_us "
              + floorUs
              + ": a warm claim would cost more than it saves";
      LOG.info(() -> "adaptive pool " + p.key.id() + " makes no more instances: " + p.notPoolable);
    }
  }

  /**
   * Backs {@code p} off after a failed preparation (doubling, at most {@link #MAX_BACKOFF_MS});
   * after {@link #MAX_FAILURES} in a row the module is not poolable, and the pool says why.
   */
  private void failed(Pool p, String why, long now) {
    p.failures++;
    if (p.failures >= MAX_FAILURES) {
      p.notPoolable = "preparing an instance failed " + p.failures + " times in a row: " + why;
      LOG.warning(() -> "warm pool " + p.key.id() + ": not poolable: " + p.notPoolable);
      return;
    }
    p.retryAtMs = now + Math.min(MAX_BACKOFF_MS, 100L << p.failures);
    LOG.warning(
        () ->
            "warm pool "
                + p.key.id()
                + ": cannot make an instance ("
                + why
                + "); next try in "
                + (p.retryAtMs - now)
                + " ms");
  }

  /**
   * Evicts the oldest idle instance of the pool that saw demand least recently (never {@code for}
   * itself, and only a pool whose demand is older than its own), to make room; null when none.
   */
  private Pool.Idle evictForRoom(Pool forPool, long now, List<WarmpoolEvict> evicted) {
    Pool victim = null;
    for (Pool q : pools.values()) {
      if (q == forPool || q.idle.isEmpty()) {
        continue;
      }
      if (forPool != null && q.lastDemandMs >= forPool.lastDemandMs) {
        continue;
      }
      if (victim == null || q.lastDemandMs < victim.lastDemandMs) {
        victim = q;
      }
    }
    if (victim == null) {
      return null;
    }
    Pool.Idle gone = victim.idle.pollFirst();
    evicted.add(evict(victim, gone, WarmpoolEvict.Reason.Capacity, now));
    return gone;
  }

  private void drain(Pool p, WarmpoolEvict.Reason reason, long now, List<WarmpoolEvict> out) {
    Pool.Idle i;
    while ((i = p.idle.pollFirst()) != null) {
      out.add(evict(p, i, reason, now));
    }
  }

  /**
   * The record of an idle instance thrown away: warm-up, idle and teardown energy. Teardown is the
   * CPU of letting go of it (the heap it held is reclaimed by the collector, not priced).
   */
  private WarmpoolEvict evict(Pool p, Pool.Idle i, WarmpoolEvict.Reason reason, long now) {
    long cpu0 = threads.getCurrentThreadCpuTime();
    i.instance.take();
    i.accrueTo(now, idlePower.milliwatts());
    long idleUj = i.energy.microjoules();
    p.idleUjSettled = saturatingAdd(p.idleUjSettled, idleUj);
    p.evictions.merge(reason, 1L, Long::sum);
    long teardownUj = cpuUj(threads.getCurrentThreadCpuTime() - cpu0);
    long overhead = saturatingAdd(saturatingAdd(i.warmupUj, idleUj), teardownUj);
    long wall = clock.wallMs().getAsLong();
    return new WarmpoolEvict(
        p.key.id(),
        i.id,
        stampOf(i.warmedMs, now, wall),
        wall,
        reason,
        overhead,
        idlePower.provenance().worst(cpuProvenance));
  }

  private void publish(List<WarmpoolEvict> evicted) {
    if (evicted.isEmpty()) {
      return;
    }
    try {
      sink.evicted(List.copyOf(evicted));
    } catch (RuntimeException ex) {
      LOG.log(Level.WARNING, "warm pool eviction records not stored: " + ex.getMessage(), ex);
    }
  }

  private long idleBytesLocked() {
    long total = 0;
    for (Pool p : pools.values()) {
      for (Pool.Idle i : p.idle) {
        total += i.bytes;
      }
    }
    return total;
  }

  private long nodeBytes() {
    return policy.nodeBytes();
  }

  private long cpuUj(long cpuNanos) {
    return Math.multiplyExact(cpuMilliwatts, Math.max(0, cpuNanos)) / 1_000_000L;
  }

  /**
   * The wall-clock stamp of {@code elapsedMs} (on the clock that never steps), given that its
   * {@code elapsedNow} is {@code wallNow}: the stamps of a record are as far apart as the time
   * measured between them, whatever the wall clock did meanwhile.
   */
  private static long stampOf(long elapsedMs, long elapsedNow, long wallNow) {
    return wallNow - Math.max(0, elapsedNow - elapsedMs);
  }

  private static long saturatingAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }

  private String newInstanceId() {
    byte[] b = new byte[8];
    random.nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  /** The refill thread's Linux nice value: below every run's thread (nice 0). */
  static final int REFILL_NICE = 10;

  /** Starts the refill thread (a daemon thread owned by these pools). */
  public synchronized void start() {
    if (refill != null || closed) {
      return;
    }
    Thread t =
        new Thread(
            () -> {
              // Refills yield to runs: the kernel runs this thread only when a core is idle enough.
              ThreadNice.lowerCurrent(REFILL_NICE)
                  .ifPresent(why -> LOG.fine("warm pool refill keeps its priority: " + why));
              while (!closed) {
                try {
                  tick();
                } catch (RuntimeException e) {
                  LOG.log(Level.WARNING, "warm pool refill failed: " + e.getMessage(), e);
                }
                java.util.concurrent.locks.LockSupport.parkNanos(
                    this, java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(policy.tickMs()));
              }
            },
            "warmpool-refill");
    t.setDaemon(true);
    t.setPriority(Thread.MIN_PRIORITY);
    refill = t;
    t.start();
  }

  private void wake() {
    Thread t = refill;
    if (t != null) {
      java.util.concurrent.locks.LockSupport.unpark(t);
    }
  }

  /** Stops the refill thread and evicts every idle instance (reason Shutdown). */
  @Override
  public void close() {
    closed = true;
    Thread t = refill;
    if (t != null) {
      java.util.concurrent.locks.LockSupport.unpark(t);
      try {
        t.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    List<WarmpoolEvict> evicted = new ArrayList<>();
    synchronized (this) {
      long now = clock.elapsedMs().getAsLong();
      for (Pool p : pools.values()) {
        drain(p, WarmpoolEvict.Reason.Shutdown, now, evicted);
      }
    }
    publish(evicted);
  }
}
