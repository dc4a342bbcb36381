package io.sandboxd.benchmarks;

import io.sandboxd.executor.EnergyModel;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.metering.MeteringConfig;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;

/**
 * Metering overhead (issue 5): the integer kernel under the full executor with each energy model,
 * in one run. {@code estimate}: {@link EnergyModel#estimate} (mW × the unit's CPU time, no sampler
 * thread); {@code attributed-1s}: {@link EnergyModel#attributed} over the discovered meters with
 * the default 1 s sampler; {@code attributed-10ms}: the same with an aggressive 10 ms sampler.
 * Overhead = attributed / estimate - 1. Either way the watchdog reads the meter on each of its
 * ticks.
 */
public class MeteringOverheadBench extends KernelUnderExecutor {
  @Param({"estimate", "attributed-1s", "attributed-10ms"})
  public String meter;

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
      model = attributed(MeteringConfig.defaults().withSamplingIntervalNs(intervalNs));
    }
    start(model, "intmix");
  }

  @Override
  String runIdPrefix() {
    return "metering-";
  }

  /** The integer kernel under the executor with this trial's energy model. */
  @Benchmark
  public ExecutionResult run() {
    return execute();
  }
}
