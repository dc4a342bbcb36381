package io.sandboxd.metering;

import io.sandboxd.attest.DeviceClass;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * What attribution needs to know about a unit: its CPU time and what it was granted.
 *
 * @param cpuTimeNs the unit's own CPU time so far in ns (e.g. the sum of its threads' {@code
 *     ThreadMXBean.getThreadCpuTime}); called from the sampler thread, so it must be thread-safe
 * @param classes the classes granted ({@code Cpu} is added: it is always dispatchable)
 * @param devices the accelerator devices (GPU UUIDs) the unit was granted and is served by
 */
public record UnitSpec(
    String runId, LongSupplier cpuTimeNs, Set<DeviceClass> classes, Set<String> devices) {
  public UnitSpec {
    Objects.requireNonNull(runId, "runId");
    Objects.requireNonNull(cpuTimeNs, "cpuTimeNs");
    Set<DeviceClass> all = EnumSet.of(DeviceClass.Cpu);
    all.addAll(classes);
    classes = Set.copyOf(all);
    devices = Set.copyOf(devices);
  }

  /** A CPU-only unit. */
  public static UnitSpec cpuOnly(String runId, LongSupplier cpuTimeNs) {
    return new UnitSpec(runId, cpuTimeNs, Set.of(), Set.of());
  }
}
