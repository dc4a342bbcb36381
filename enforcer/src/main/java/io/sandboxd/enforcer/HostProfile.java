package io.sandboxd.enforcer;

import io.sandboxd.attest.DeviceClass;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;

/**
 * What a host can offer a unit: the tier it runs units at, and the device classes it can both
 * confine at that tier and meter (capabilities.md ComputeGrant rule 2).
 */
public record HostProfile(Tier tier, Set<DeviceClass> confinable, Set<DeviceClass> meterable) {

  public HostProfile {
    confinable = Collections.unmodifiableSet(copy(confinable));
    meterable = Collections.unmodifiableSet(copy(meterable));
  }

  private static EnumSet<DeviceClass> copy(Set<DeviceClass> s) {
    EnumSet<DeviceClass> out = EnumSet.noneOf(DeviceClass.class);
    out.addAll(s);
    return out;
  }
}
