package io.sandboxd.benchmarks;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.Provenance;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.InstanceShape;
import io.sandboxd.executor.PreparedInstance;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.warmpool.Claim;
import io.sandboxd.warmpool.IdlePower;
import io.sandboxd.warmpool.PoolClock;
import io.sandboxd.warmpool.PoolKey;
import io.sandboxd.warmpool.PoolPolicy;
import io.sandboxd.warmpool.WarmPools;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Claim → first guest instruction (issue 10). One op ends when the unit's entry, which does
 * nothing, returns: its only guest instruction is the first one.
 *
 * <ul>
 *   <li>{@code warm}: {@link WarmPools#claim} of an instance the pool made in advance (lock, key
 *       and shape match, idle-energy accrual, the claim record), then the entry.
 *   <li>{@code factory}: instantiate from the cached compiled unit ({@link
 *       PreparedInstance#prepare}: memory allocated and zeroed, data segments, tables), then the
 *       entry.
 *   <li>{@code cold}: parse + validate + compile + instantiate (a fresh {@link UnitCompiler}, so
 *       nothing is cached), then the entry.
 * </ul>
 *
 * {@code module}: {@code small} (one 64 KiB page) or {@code mem16m} (256 pages, 16 MiB, initial).
 * Sample mode gives p50/p99; the pool is refilled outside the measured op.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xmx4g"})
public class WarmClaimBench {
  @Param({"small", "mem16m"})
  public String module;

  private byte[] wasm;
  private CompiledUnit unit;
  private InstanceShape shape;
  private WarmPools pools;
  private PoolKey key;
  private PreparedInstance factoryMade;

  static String wat(int pages) {
    return "(module (memory " + pages + " " + pages + ") (func (export \"run\") nop))";
  }

  @Setup(Level.Trial)
  public void setUp() {
    wasm = Wat2Wasm.parse(wat(module.equals("small") ? 1 : 256));
    unit = new UnitCompiler(4).compile(wasm);
    shape = new InstanceShape(unit.initialPages(), 64L << 20);
    key = PoolKey.s2(unit.address());
    pools =
        new WarmPools(
            new PoolPolicy(
                List.of(new PoolPolicy.Configured(unit.address(), 1, 1, 3_600_000)),
                PoolPolicy.Adaptive.OFF,
                1L << 30,
                16L << 30,
                100),
            IdlePower.fixed(5_000, Provenance.Estimator),
            10_000,
            Provenance.Estimator,
            records -> {},
            PoolClock.SYSTEM);
    pools.configure(a -> java.util.Optional.of(unit), u -> shape);
  }

  /** Keeps one instance waiting (made outside the measured op). */
  @Setup(Level.Invocation)
  public void refill() {
    pools.tick();
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    pools.close();
  }

  @Benchmark
  public long[] warm() {
    Claim c = pools.claim(key, unit, shape, "bench");
    if (!c.warm()) {
      throw new IllegalStateException("the pool was empty: not a warm claim");
    }
    return c.instance().get().enterUnbound("run");
  }

  @Benchmark
  public long[] factory() {
    return PreparedInstance.prepare(unit, shape).enterUnbound("run");
  }

  @Benchmark
  public long[] cold() {
    CompiledUnit fresh = new UnitCompiler(1).compile(wasm);
    return PreparedInstance.prepare(fresh, shape).enterUnbound("run");
  }
}
