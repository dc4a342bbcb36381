package io.sandboxd.metering;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.util.Objects;

/**
 * One energy counter a meter exposes: its identity, the class it belongs to, and how far it can be
 * trusted (provenance, resolution in µJ, the shortest window it can resolve in ns).
 *
 * @param id stable name, e.g. {@code package-0}, {@code package-0/dram}, or a GPU UUID
 */
public record MeterDomain(
    String id,
    DeviceClass energyClass,
    DomainRole role,
    Provenance provenance,
    long resolutionUj,
    long minWindowNs,
    String source) {

  public MeterDomain {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(energyClass, "energyClass");
    Objects.requireNonNull(role, "role");
    Objects.requireNonNull(provenance, "provenance");
    Objects.requireNonNull(source, "source");
    if (resolutionUj < 1) {
      throw new IllegalArgumentException("resolutionUj must be >= 1: " + resolutionUj);
    }
    if (minWindowNs < 0) {
      throw new IllegalArgumentException("minWindowNs must be >= 0: " + minWindowNs);
    }
  }
}
