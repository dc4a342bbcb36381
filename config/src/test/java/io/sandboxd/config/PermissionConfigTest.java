package io.sandboxd.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A rule's {@code permissions}: read strictly, defaulted, and the modes' defaults. */
class PermissionConfigTest {
  static NodePolicy policy(String rule) {
    return ConfigText.parse(document(rule)).policy();
  }

  /** A config document whose policy has the one rule {@code rule}. */
  private static String document(String rule) {
    return "{\"policy\":{\"rules\":[" + rule + "]}}";
  }

  @Test
  void aRuleGivesWhatItListsAndWithoutTheFieldSubmitOwnRunsAndStatus() {
    NodePolicy p =
        policy(
            "{\"name\":\"ops\",\"uids\":[7],\"ceiling\":\"unrestricted\","
                + "\"permissions\":[\"any_run\",\"store\",\"jcp_agent\"]}");
    assertEquals(
        EnumSet.of(Permission.ANY_RUN, Permission.STORE, Permission.JCP_AGENT),
        p.rules().get(0).permissions());
    NodePolicy d = policy("{\"name\":\"t\",\"uids\":[7],\"ceiling\":\"unrestricted\"}");
    assertEquals(
        Set.of(Permission.SUBMIT, Permission.OWN_RUNS, Permission.STATUS),
        d.rules().get(0).permissions());
    NodePolicy none =
        policy("{\"name\":\"t\",\"uids\":[7],\"ceiling\":\"unrestricted\",\"permissions\":[]}");
    assertTrue(none.rules().get(0).permissions().isEmpty(), "an empty list gives nothing");
  }

  @Test
  void anUnknownPermissionIsRefusedNamingItsPath() {
    String why =
        ConfigText.refusal(
            document(
                "{\"name\":\"t\",\"uids\":[7],\"ceiling\":\"unrestricted\","
                    + "\"permissions\":[\"submit\",\"everything\"]}"));
    assertTrue(why.startsWith("$.policy.rules[0].permissions[1]: \"everything\""), why);
  }

  @Test
  void theModesDefaultsGiveTheirOwnUsersEverythingAndTheGroupSubmitAndOwnRuns() {
    NodePolicy dev = NodePolicy.dev(1234, 4);
    assertEquals(Permission.all(), dev.rules().get(0).permissions());
    NodePolicy sys = NodePolicy.system(1234, 4);
    assertEquals(Permission.all(), sys.rules().get(0).permissions());
    assertEquals(Permission.all(), sys.rules().get(1).permissions());
    assertEquals(Permission.defaults(), sys.rules().get(2).permissions());
  }
}
