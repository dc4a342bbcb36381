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
 * Metering overhead (issue 5): the integer kernel under the full executor with each energy model,
 * in one run. {@code estimate}: {@link EnergyModel#estimate} (mW × the unit's CPU time, no sampler
 * thread); {@code attributed-1s}: {@link EnergyModel#attributed} over the discovered meters with
 * the default 1 s sampler; {@code attributed-10ms}: the same with an aggressive 10 ms sampler.
 * Overhead = attributed / estimate - 1. Either way the watchdog reads the meter on each of its
 * ticks.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 3)
@Measurement(iterations = 3, time = 3)
@Fork(1)
public class MeteringOverheadBench {
  @Param({"estimate", "attributed-1s", "attributed-10ms"})
  public String meter;

  private DiscoveredMeters meters;
  private Attribution attribution;
  private Executor executor;
  private CompiledUnit unit;
  private final AtomicLong runs = new AtomicLong();

  @Setup(Level.Trial)
  public void setUp() {
    EnergyModel model;
    if (meter.equals("estimate")) {
      model = EnergyModel.estimate(10_000);
    } else {
      long intervalNs =
          meter.equals("attributed-10ms")
              ? TimeUnit.MILLISECONDS.toNanos(10)
              : MeteringConfig.DEFAULT_SAMPLING_INTERVAL_NS;
      MeteringConfig config = MeteringConfig.defaults().withSamplingIntervalNs(intervalNs);
      meters = MeterDiscovery.discover(config);
      attribution = Attribution.start(meters, config);
      model = EnergyModel.attributed(attribution);
    }
    executor = new Executor(1, model, 600_000);
    unit = new UnitCompiler(4).compile(Kernels.wasm("intmix"));
    BenchSupport.completed(executor.execute(request()));
  }

  private UnitRequest request() {
    return new UnitRequest(
        "metering-" + runs.incrementAndGet(), unit, "run", BenchSupport.grants(false, false));
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    executor.close();
    if (attribution != null) {
      attribution.close();
      meters.close();
    }
  }

  /** The integer kernel under the executor with this trial's energy model. */
  @Benchmark
  public ExecutionResult run() {
    return executor.execute(request());
  }
}
