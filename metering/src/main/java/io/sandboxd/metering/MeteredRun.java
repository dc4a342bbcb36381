package io.sandboxd.metering;

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
  private final Map<EnergyClass, int[]> serving;
  private final Map<EnergyClass, Long> uj = new EnumMap<>(EnergyClass.class);
  private final Set<EnergyClass> shared = EnumSet.noneOf(EnergyClass.class);
  private final Set<EnergyClass> reset = EnumSet.noneOf(EnergyClass.class);
  private final Set<EnergyClass> gap = EnumSet.noneOf(EnergyClass.class);
  private long lastCpuNs;
  private long passes;
  private RunEnergy finalEnergy;

  MeteredRun(Attribution attribution, UnitSpec spec, Map<EnergyClass, int[]> serving, long cpuNs) {
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

  Map<EnergyClass, int[]> serving() {
    return serving;
  }

  /** The unit's CPU time since the previous pass, ns. */
  long advanceCpu() {
    long now = spec.cpuTimeNs().getAsLong();
    long d = Math.max(0, now - lastCpuNs);
    lastCpuNs = Math.max(lastCpuNs, now);
    return d;
  }

  void add(EnergyClass c, long microjoules) {
    uj.merge(c, microjoules, Math::addExact);
  }

  long uj(EnergyClass c) {
    return uj.getOrDefault(c, 0L);
  }

  void markShared(EnergyClass c) {
    shared.add(c);
  }

  boolean shared(EnergyClass c) {
    return shared.contains(c);
  }

  void markReset(EnergyClass c) {
    reset.add(c);
  }

  boolean reset(EnergyClass c) {
    return reset.contains(c);
  }

  void markGap(EnergyClass c) {
    gap.add(c);
  }

  boolean gap(EnergyClass c) {
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
