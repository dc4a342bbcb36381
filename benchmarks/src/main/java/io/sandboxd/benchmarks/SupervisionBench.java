package io.sandboxd.benchmarks;

import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.EnergyModel;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.executor.UnitRequest;
import io.sandboxd.metering.Attribution;
import io.sandboxd.metering.DiscoveredMeters;
import io.sandboxd.metering.MeterDiscovery;
import io.sandboxd.metering.MeteringConfig;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Supervision overhead on guest compute (issue 4): three CPU-bound C kernels (see {@link Kernels})
 * run (a) under the full {@link Executor} — guest thread handoff, the watchdog reading the guest's
 * CPU time and energy, metering attributed from the discovered meters (the estimator where there is
 * no RAPL) sampled every second, accounting and the receipt fields — and (b) on bare Chicory with
 * the same compiled machine factory, on the benchmark thread. Overhead = executor / bare - 1.
 * {@code bareByteArrayMemory} probes a Chicory option (see README.md).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 3)
@Measurement(iterations = 3, time = 3)
@Fork(1)
public class SupervisionBench {
  @Param({"intmix", "nbody", "randwalk"})
  public String kernel;

  private DiscoveredMeters meters;
  private Attribution attribution;
  private Executor executor;
  private CompiledUnit unit;
  private final AtomicLong runs = new AtomicLong();

  @Setup(Level.Trial)
  public void setUp() {
    MeteringConfig config = MeteringConfig.defaults();
    meters = MeterDiscovery.discover(config);
    attribution = Attribution.start(meters, config);
    executor = new Executor(1, EnergyModel.attributed(attribution), 600_000);
    unit = new UnitCompiler(4).compile(Kernels.wasm(kernel));
    BenchSupport.completed(executor.execute(request()));
    BenchSupport.ok(BenchSupport.bareRun(unit));
  }

  private UnitRequest request() {
    // Distinct run ids: the attribution refuses two active runs of one id.
    return new UnitRequest(
        "supervision-" + runs.incrementAndGet(), unit, "run", BenchSupport.grants(false, false));
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    executor.close();
    attribution.close();
    meters.close();
  }

  /** The kernel under the full executor. */
  @Benchmark
  public ExecutionResult executor() {
    return executor.execute(request());
  }

  /** The kernel on bare Chicory, same compiled machine. */
  @Benchmark
  public long bare() {
    return BenchSupport.bareRun(unit);
  }

  /**
   * Diagnostic, not part of the overhead figure: bare Chicory with {@code ByteArrayMemory} instead
   * of the default {@code ByteBufferMemory}, to see what that Chicory option is worth per kernel.
   */
  @Benchmark
  public long bareByteArrayMemory() {
    return BenchSupport.bareRunByteArrayMemory(unit);
  }
}
