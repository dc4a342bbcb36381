package io.sandboxd.benchmarks;

import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.Executor;
import io.sandboxd.metering.MeteringConfig;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;

/**
 * Supervision overhead on guest compute (issue 4): three CPU-bound C kernels (see {@link Kernels})
 * run (a) under the full {@link Executor} — guest thread handoff, the watchdog reading the guest's
 * CPU time and energy, metering attributed from the discovered meters (the estimator where there is
 * no RAPL) sampled every second, accounting and the receipt fields — and (b) on bare Chicory with
 * the same compiled machine factory, on the benchmark thread. Overhead = executor / bare - 1.
 * {@code bareByteArrayMemory} probes a Chicory option (see README.md).
 */
public class SupervisionBench extends KernelUnderExecutor {
  @Param({"intmix", "nbody", "randwalk"})
  public String kernel;

  @Setup(Level.Trial)
  public void setUp() {
    start(attributed(MeteringConfig.defaults()), kernel);
    BenchSupport.ok(BenchSupport.bareRun(unit()));
  }

  @Override
  String runIdPrefix() {
    return "supervision-";
  }

  /** The kernel under the full executor. */
  @Benchmark
  public ExecutionResult executor() {
    return execute();
  }

  /** The kernel on bare Chicory, same compiled machine. */
  @Benchmark
  public long bare() {
    return BenchSupport.bareRun(unit());
  }

  /**
   * Diagnostic, not part of the overhead figure: bare Chicory with {@code ByteArrayMemory} instead
   * of the default {@code ByteBufferMemory}, to see what that Chicory option is worth per kernel.
   */
  @Benchmark
  public long bareByteArrayMemory() {
    return BenchSupport.bareRunByteArrayMemory(unit());
  }
}
