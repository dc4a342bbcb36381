package io.sandboxd.enforcer;

import io.sandboxd.attest.DeviceClass;

/** The isolation tiers S0..S6 (WIRE.md §2.12), ordered from weakest to strongest. */
public enum Tier {
  S0,
  S1,
  S2,
  S3,
  S4,
  S5,
  S6;

  /** True when this tier is at least {@code other}. */
  public boolean atLeast(Tier other) {
    return compareTo(other) >= 0;
  }

  /**
   * The lowest tier {@code grants} may run at: S2 for any device class beyond Cpu/Simd, for
   * process.exec, browser.enabled and display.enabled; S0 otherwise. (Direct device assignment, S5,
   * and confidential compute, S6, have no grant field yet.)
   */
  public static Tier floorOf(Grants grants) {
    boolean s2 =
        grants.compute().devices().stream()
                .anyMatch(d -> d != DeviceClass.Cpu && d != DeviceClass.Simd)
            || grants.process().map(ProcessGrant::exec).orElse(false)
            || grants.browser().map(BrowserGrant::enabled).orElse(false)
            || grants.display().map(DisplayGrant::enabled).orElse(false);
    return s2 ? S2 : S0;
  }
}
