package io.sandboxd.metering;

import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.util.Objects;

/**
 * A unit's energy for one class, with what a receipt needs to be honest about it (WIRE.md §2.3).
 *
 * @param uj energy attributed to the unit, µJ
 * @param source the meter(s) it came from, e.g. "rapl", "nvml", "estimator"
 * @param counterReset a counter reset (driver reload) happened during the run: {@code uj} is a
 *     lower bound and the segment should be flagged
 * @param sampleGap some sample during the run failed; the energy was still counted at the next good
 *     sample, but its split between units used that later interval's CPU shares
 */
public record EnergyReading(
    DeviceClass energyClass,
    long uj,
    Provenance provenance,
    long resolutionUj,
    long minWindowNs,
    String source,
    boolean counterReset,
    boolean sampleGap) {
  public EnergyReading {
    Objects.requireNonNull(energyClass, "energyClass");
    Objects.requireNonNull(provenance, "provenance");
    Objects.requireNonNull(source, "source");
    if (uj < 0) {
      throw new IllegalArgumentException("uj must be >= 0: " + uj);
    }
  }

  /** The receipt's shape of this reading: energy, provenance and meter. */
  public ClassEnergy classEnergy() {
    return new ClassEnergy(uj, provenance, source, resolutionUj, minWindowNs);
  }
}
