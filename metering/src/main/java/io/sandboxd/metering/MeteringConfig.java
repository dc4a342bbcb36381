package io.sandboxd.metering;

import java.nio.file.Path;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Where the meters look and how often they are sampled; every path is configurable so that tests
 * and unusual hosts can point them elsewhere.
 *
 * @param powercapRoot the powercap sysfs tree
 * @param msrRoot the directory holding {@code N/msr} devices
 * @param cpuSysRoot {@code /sys/devices/system/cpu}, for each CPU's package id
 * @param cpuInfo {@code /proc/cpuinfo}, for the vendor
 * @param nvmlLibrary NVML's library name or absolute path; empty disables the GPU meter
 * @param procStat {@code /proc/stat}, for node CPU time
 * @param ticksPerSecond USER_HZ, the unit of /proc/stat
 * @param estimator the power model used for classes nothing measures
 * @param samplingIntervalNs time between periodic samples; short enough that no counter can wrap
 *     twice in between (RAPL's ~262 kJ range lasts ~20 min at 200 W)
 * @param cpuIdleBaselineMw node CPU draw at idle, subtracted before a measured package's energy is
 *     shared out, so units are charged the active energy only; 0 charges everything
 */
public record MeteringConfig(
    Path powercapRoot,
    Path msrRoot,
    Path cpuSysRoot,
    Path cpuInfo,
    String nvmlLibrary,
    Path procStat,
    long ticksPerSecond,
    EstimatorModel estimator,
    long samplingIntervalNs,
    long cpuIdleBaselineMw) {

  /** One second: 0.02% of a wrap period at 200 W, and a cheap pass (see the benchmark). */
  public static final long DEFAULT_SAMPLING_INTERVAL_NS = 1_000_000_000L;

  public MeteringConfig {
    Objects.requireNonNull(powercapRoot, "powercapRoot");
    Objects.requireNonNull(msrRoot, "msrRoot");
    Objects.requireNonNull(cpuSysRoot, "cpuSysRoot");
    Objects.requireNonNull(cpuInfo, "cpuInfo");
    Objects.requireNonNull(nvmlLibrary, "nvmlLibrary");
    Objects.requireNonNull(procStat, "procStat");
    Objects.requireNonNull(estimator, "estimator");
    if (ticksPerSecond <= 0) {
      throw new IllegalArgumentException("ticksPerSecond must be > 0: " + ticksPerSecond);
    }
    if (samplingIntervalNs < 1_000_000L || samplingIntervalNs > 60_000_000_000L) {
      throw new IllegalArgumentException(
          "samplingIntervalNs must lie in [1 ms, 60 s] so no counter wraps unseen: "
              + samplingIntervalNs);
    }
    if (cpuIdleBaselineMw < 0) {
      throw new IllegalArgumentException("cpuIdleBaselineMw must be >= 0: " + cpuIdleBaselineMw);
    }
  }

  /**
   * The real host's paths, NVML by soname, the Cpu-only estimator, 1 s sampling, no idle baseline.
   */
  public static MeteringConfig defaults() {
    return new MeteringConfig(
        RaplPowercapMeter.DEFAULT_ROOT,
        Path.of("/dev/cpu"),
        Path.of("/sys/devices/system/cpu"),
        Path.of("/proc/cpuinfo"),
        NvmlMeter.DEFAULT_LIBRARY,
        ProcStatCpuTime.DEFAULT_PATH,
        ProcStatCpuTime.DEFAULT_TICKS_PER_SECOND,
        EstimatorModel.cpuOnly(),
        DEFAULT_SAMPLING_INTERVAL_NS,
        0);
  }

  public MeteringConfig withPowercapRoot(Path p) {
    return with(d -> d.powercapRoot = p);
  }

  /**
   * Points the MSR meter at {@code msrRoot/N/msr}, with CPU topology and vendor from the other two.
   */
  public MeteringConfig withMsr(Path msr, Path cpuSys, Path info) {
    return with(
        d -> {
          d.msrRoot = msr;
          d.cpuSysRoot = cpuSys;
          d.cpuInfo = info;
        });
  }

  public MeteringConfig withNvmlLibrary(String library) {
    return with(d -> d.nvmlLibrary = library);
  }

  public MeteringConfig withProcStat(Path p) {
    return with(d -> d.procStat = p);
  }

  public MeteringConfig withEstimator(EstimatorModel model) {
    return with(d -> d.estimator = model);
  }

  public MeteringConfig withSamplingIntervalNs(long ns) {
    return with(d -> d.samplingIntervalNs = ns);
  }

  public MeteringConfig withCpuIdleBaselineMw(long mw) {
    return with(d -> d.cpuIdleBaselineMw = mw);
  }

  /** This configuration with what {@code change} sets in a draft of it replaced. */
  private MeteringConfig with(Consumer<Draft> change) {
    Draft d = new Draft(this);
    change.accept(d);
    return d.config();
  }

  /** A configuration's values while a wither replaces some of them. */
  private static final class Draft {
    Path powercapRoot;
    Path msrRoot;
    Path cpuSysRoot;
    Path cpuInfo;
    String nvmlLibrary;
    Path procStat;
    final long ticksPerSecond;
    EstimatorModel estimator;
    long samplingIntervalNs;
    long cpuIdleBaselineMw;

    Draft(MeteringConfig c) {
      powercapRoot = c.powercapRoot;
      msrRoot = c.msrRoot;
      cpuSysRoot = c.cpuSysRoot;
      cpuInfo = c.cpuInfo;
      nvmlLibrary = c.nvmlLibrary;
      procStat = c.procStat;
      ticksPerSecond = c.ticksPerSecond;
      estimator = c.estimator;
      samplingIntervalNs = c.samplingIntervalNs;
      cpuIdleBaselineMw = c.cpuIdleBaselineMw;
    }

    MeteringConfig config() {
      return new MeteringConfig(
          powercapRoot,
          msrRoot,
          cpuSysRoot,
          cpuInfo,
          nvmlLibrary,
          procStat,
          ticksPerSecond,
          estimator,
          samplingIntervalNs,
          cpuIdleBaselineMw);
    }
  }

  /** Node CPU time as this configuration reads it (one read shared by the passes of a window). */
  public NodeCpuTime nodeCpuTime() {
    return new SharedCpuTime(
        new ProcStatCpuTime(procStat, ticksPerSecond),
        System::nanoTime,
        SharedCpuTime.DEFAULT_WINDOW_NS);
  }
}
