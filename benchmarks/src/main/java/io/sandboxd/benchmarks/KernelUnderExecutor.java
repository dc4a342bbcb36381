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
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One {@link Kernels} kernel run under the full {@link Executor}, its energy model over the
 * discovered meters or not, with the run settings of calls that take milliseconds: what {@link
 * SupervisionBench} and {@link MeteringOverheadBench} both measure, each against its own baseline.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 3)
@Measurement(iterations = 3, time = 3)
@Fork(1)
public abstract class KernelUnderExecutor {
  private DiscoveredMeters meters;
  private Attribution attribution;
  private Executor executor;
  private CompiledUnit unit;
  private final AtomicLong runs = new AtomicLong();

  /** Discovers the meters under {@code config} and attributes them; the model draws on both. */
  final EnergyModel attributed(MeteringConfig config) {
    meters = MeterDiscovery.discover(config);
    attribution = Attribution.start(meters, config);
    return EnergyModel.attributed(attribution);
  }

  /** Starts the executor under {@code model} with {@code kernel} compiled, and runs it once. */
  final void start(EnergyModel model, String kernel) {
    executor = new Executor(1, model, 600_000);
    unit = new UnitCompiler(4).compile(Kernels.wasm(kernel));
    BenchSupport.completed(executor.execute(request()));
  }

  final CompiledUnit unit() {
    return unit;
  }

  /** Runs the kernel once under the executor. */
  final ExecutionResult execute() {
    return executor.execute(request());
  }

  /** The run ids' prefix, naming the benchmark in what the executor logs. */
  abstract String runIdPrefix();

  private UnitRequest request() {
    // Distinct run ids: the attribution refuses two active runs of one id.
    return new UnitRequest(
        runIdPrefix() + runs.incrementAndGet(), unit, "run", BenchSupport.grants(false, false));
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    executor.close();
    if (attribution != null) {
      attribution.close();
      meters.close();
    }
  }
}
