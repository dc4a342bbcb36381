package io.sandboxd.enforcer;

import io.sandboxd.attest.DeviceClass;

/**
 * The checks of WIRE.md §2.1 made when a grant set is offered to a host: the tier floor and that
 * every granted device class can be both confined and metered. (Credential endpoints are checked
 * while parsing.)
 */
public final class GrantAcceptance {
  private GrantAcceptance() {}

  /** Accepted at the host's tier, or declined with the first reason found. */
  public static Acceptance decide(Grants grants, HostProfile host) {
    Tier floor = Tier.floorOf(grants);
    if (!host.tier().atLeast(floor)) {
      return new Acceptance.Declined(
          "grant needs tier " + floor + " or above; this host runs units at " + host.tier());
    }
    for (DeviceClass d : grants.compute().devices()) {
      if (d == DeviceClass.Cpu) {
        continue; // implicit everywhere: the host confines and meters its own CPUs by construction
      }
      if (!host.confinable().contains(d)) {
        return new Acceptance.Declined(
            "device class " + d.jsonName() + " cannot be confined at " + host.tier());
      }
      if (!host.meterable().contains(d)) {
        return new Acceptance.Declined(
            "device class " + d.jsonName() + " cannot be metered; metering is not optional");
      }
    }
    return new Acceptance.Accepted(host.tier());
  }
}
