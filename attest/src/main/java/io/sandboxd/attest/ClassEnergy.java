package io.sandboxd.attest;

import java.util.Objects;

/**
 * Energy of one device class attributed to a unit, with the meter it came from (WIRE.md §2.3).
 *
 * @param uj energy, µJ
 * @param provenance how it was obtained
 * @param source the meter(s), e.g. "rapl", "nvml", "estimator"
 * @param resolutionUj the meter's resolution, µJ
 * @param minWindowNs the shortest window the meter can resolve, ns
 */
public record ClassEnergy(
    long uj, Provenance provenance, String source, long resolutionUj, long minWindowNs) {
  public ClassEnergy {
    Objects.requireNonNull(provenance, "provenance");
    Objects.requireNonNull(source, "source");
    if (uj < 0) {
      throw new IllegalArgumentException("uj must be >= 0: " + uj);
    }
  }
}
