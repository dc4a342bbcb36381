package io.sandboxd.metering;

import io.sandboxd.attest.DeviceClass;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

/**
 * One unit being charged by {@link Attribution}: read it while it runs to check the energy budget,
 * end it to get the figures for its receipt.
 */
public final class MeteredRun {
  private final Attribution attribution;
  private final UnitSpec spec;
  private final Map<DeviceClass, int[]> serving;
  private final Map<DeviceClass, Long> uj = new EnumMap<>(DeviceClass.class);
  private final Set<DeviceClass> shared = EnumSet.noneOf(DeviceClass.class);
  private final Set<DeviceClass> reset = EnumSet.noneOf(DeviceClass.class);
  private final Set<DeviceClass> gap = EnumSet.noneOf(DeviceClass.class);
  private long lastCpuNs;
  private long passes;
  private RunEnergy finalEnergy;

  MeteredRun(Attribution attribution, UnitSpec spec, Map<DeviceClass, int[]> serving, long cpuNs) {
    this.attribution = attribution;
    this.spec = spec;
    this.serving = Map.copyOf(serving);
    this.lastCpuNs = cpuNs;
  }

  public String runId() {
    return spec.runId();
  }

  /**
   * Energy charged up to the last sampling pass: cheap, so an executor may call it often; a breach
   * is seen at most one sampling interval late.
   */
  public RunEnergy current() {
    return attribution.current(this);
  }

  /** Takes a final pass and returns the run's energy; later calls return the same figures. */
  public RunEnergy end() {
    return attribution.end(this);
  }

  UnitSpec spec() {
    return spec;
  }

  Map<DeviceClass, int[]> serving() {
    return serving;
  }

  /** The unit's CPU time since the previous pass, ns. */
  long advanceCpu() {
    long now = spec.cpuTimeNs().getAsLong();
    long d = Math.max(0, now - lastCpuNs);
    lastCpuNs = Math.max(lastCpuNs, now);
    return d;
  }

  void add(DeviceClass c, long microjoules) {
    uj.merge(c, microjoules, Math::addExact);
  }

  long uj(DeviceClass c) {
    return uj.getOrDefault(c, 0L);
  }

  void markShared(DeviceClass c) {
    shared.add(c);
  }

  boolean shared(DeviceClass c) {
    return shared.contains(c);
  }

  void markReset(DeviceClass c) {
    reset.add(c);
  }

  boolean reset(DeviceClass c) {
    return reset.contains(c);
  }

  void markGap(DeviceClass c) {
    gap.add(c);
  }

  boolean gap(DeviceClass c) {
    return gap.contains(c);
  }

  void countPass() {
    passes++;
  }

  long passes() {
    return passes;
  }

  void finish(RunEnergy energy) {
    finalEnergy = energy;
  }

  RunEnergy finalEnergy() {
    return finalEnergy;
  }
}
