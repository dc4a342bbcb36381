package io.sandboxd.metering;

/** What part of the machine one energy counter covers. */
public enum DomainRole {
  /** A whole CPU package (RAPL package-N). */
  Package,
  /** The cores of a package; already inside {@link #Package}. */
  Core,
  /** The uncore (integrated graphics, caches) of a package; already inside {@link #Package}. */
  Uncore,
  /** The DRAM attached to a package; not inside {@link #Package}. */
  Dram,
  /** The whole platform (RAPL psys); contains the packages, so it is kept apart. */
  Psys,
  /** One whole accelerator device, such as a GPU addressed by its UUID. */
  Device,
  /** A modelled counter produced by the {@link Estimator}. */
  Estimate;

  /**
   * Whether counters of this role can be summed without counting energy twice: core and uncore are
   * inside the package, psys contains everything.
   */
  public boolean additive() {
    return switch (this) {
      case Package, Dram, Device, Estimate -> true;
      case Core, Uncore, Psys -> false;
    };
  }
}
