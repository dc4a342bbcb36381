package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.enforcer.Enforcer;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.HostService;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ParkSignalAmendTest {
  static final String BASE =
      "\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000,\"cpu_time_ms\":1000,"
          + "\"memory_bytes\":65536}";
  static final Grants WIDE = grants("{" + BASE + ",\"host\":{\"logging\":true,\"random\":true}}");
  static final Grants TIGHT = grants("{" + BASE + ",\"host\":{\"logging\":true}}");

  static Grants grants(String json) {
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void anAmendmentReachesTheAttachedEnforcer() {
    ParkSignal p = new ParkSignal();
    Enforcer e = new Enforcer(WIDE);
    p.attach(e);
    assertTrue(e.mayHost(HostService.RANDOM).allowed());
    p.tighten(TIGHT);
    assertFalse(e.mayHost(HostService.RANDOM).allowed());
    assertEquals(TIGHT.grantsId(), p.amended().get().grantsId());
  }

  @Test
  void anAmendmentBeforeTheRunStartsAppliesAtAttachAndAWiderOneIsRefused() {
    ParkSignal p = new ParkSignal();
    p.tighten(TIGHT);
    assertThrows(IllegalArgumentException.class, () -> p.tighten(WIDE));
    Enforcer e = new Enforcer(WIDE);
    p.attach(e);
    assertFalse(e.mayHost(HostService.RANDOM).allowed());
    assertEquals(TIGHT.grantsId(), e.grants().grantsId());
  }
}
