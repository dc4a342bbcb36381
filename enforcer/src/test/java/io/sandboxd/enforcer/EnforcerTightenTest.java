package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class EnforcerTightenTest {
  @Test
  void aTightenedEnforcerDecidesLaterQueriesUnderTheNewGrant() {
    Enforcer e = new Enforcer(JcpFixtures.CEILING);
    assertTrue(e.mayHost(HostService.CLOCK).allowed());
    assertTrue(e.mayPath(PathMode.READ, "data/b/x").allowed());
    e.tighten(JcpFixtures.CHILD);
    assertFalse(e.mayHost(HostService.CLOCK).allowed(), "clock is not in the amended grant");
    assertFalse(e.mayPath(PathMode.READ, "data/b/x").allowed());
    assertTrue(e.mayPath(PathMode.READ, "data/a/x").allowed());
    assertEquals(JcpFixtures.CHILD.grantsId(), e.grants().grantsId());
  }

  @Test
  void widenIsRefusedAndNothingChanges() {
    Enforcer e = new Enforcer(JcpFixtures.CEILING);
    e.tighten(JcpFixtures.CHILD);
    // The ceiling is within the original grant but wider than the one now in force.
    assertThrows(IllegalArgumentException.class, () -> e.tighten(JcpFixtures.CEILING));
    assertThrows(IllegalArgumentException.class, () -> e.tighten(JcpFixtures.WIDE_CHILD));
    assertEquals(JcpFixtures.CHILD.grantsId(), e.grants().grantsId());
    assertFalse(e.mayHost(HostService.CLOCK).allowed());
  }
}
