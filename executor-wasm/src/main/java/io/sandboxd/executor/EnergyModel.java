package io.sandboxd.executor;

import io.sandboxd.attest.Provenance;
import java.util.Map;

/**
 * Turns a unit's CPU time into energy per device class. The default is a labelled estimate (a
 * configured CPU power in milliwatts); a measured model replaces it where meters exist.
 */
public interface EnergyModel {
  /** Energy of a unit that used {@code cpuNanos} of CPU time, one entry per dispatchable class. */
  Map<String, ClassEnergyReading> energyFor(long cpuNanos, java.util.Set<String> classes);

  /** A power-model estimate, always labelled {@link Provenance#Estimator}. */
  static EnergyModel estimate(long cpuMilliwatts) {
    return (cpuNanos, classes) -> {
      java.util.Map<String, ClassEnergyReading> out = new java.util.TreeMap<>();
      for (String c : classes) {
        // µJ = mW × ns × 1e-6; non-CPU classes are not exercised by a WASM unit here.
        long uj = c.equals("Cpu") ? Math.multiplyExact(cpuMilliwatts, cpuNanos) / 1_000_000L : 0;
        out.put(c, new ClassEnergyReading(uj, Provenance.Estimator, "estimator", 1, 1_000_000));
      }
      return out;
    };
  }
}
