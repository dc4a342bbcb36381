package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
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

  @Test
  void theNodeDenylistStillHoldsAfterATighten() {
    // A tightened Enforcer once rebuilt its denylist from the bare hashes it kept, which the
    // b3: check refused: an amendment on a node with a denylist threw instead of applying.
    String denied = "b3:" + "ab".repeat(32);
    Enforcer e = new Enforcer(JcpFixtures.CEILING, Set.of(denied));
    e.tighten(JcpFixtures.CHILD);
    assertEquals(JcpFixtures.CHILD.grantsId(), e.grants().grantsId());
    Decision d = e.mayExec(ExecRequest.of(List.of(ExecStep.hashed("x", denied.substring(3)))), 0);
    assertTrue(d.reason().contains("denylist"), d.reason());
  }
}
