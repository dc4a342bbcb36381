package io.sandboxd.config;

import static io.sandboxd.config.ConfigText.parse;
import static io.sandboxd.config.ConfigText.refusal;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.enforcer.Attenuation;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The {@code policy} section of sandboxd.json and the mode defaults. */
class NodePolicyConfigTest {
  @Test
  void noSectionMeansTheModeDefault() {
    NodePolicy p = parse("{}").policy();
    assertFalse(p.configured());
    assertEquals(NodePolicy.MODE_DEFAULT, p);
    NodePolicy dev = p.orDefault(true, 1234, 4);
    assertEquals(1, dev.rules().size());
    assertEquals(Set.of(1234L), dev.rules().get(0).uids());
    assertInstanceOf(NodePolicy.Ceiling.Unrestricted.class, dev.rules().get(0).ceiling());
    NodePolicy sys = p.orDefault(false, 1234, 4);
    assertEquals(
        List.of("root", "daemon-user", "group-sandboxd"),
        sys.rules().stream().map(NodePolicy.Rule::name).toList());
    assertEquals(sys, sys.orDefault(true, 1234, 4), "a chosen system default is not made dev");
    NodePolicy.Rule group = sys.rules().get(2);
    assertEquals(Set.of("sandboxd"), group.groups());
    Grants ceiling = ((NodePolicy.Ceiling.Bounded) group.ceiling()).grants();
    Grants exec =
        Grants.parse(
            "{\"process\":{\"exec\":true,\"programs\":[\"ls\"],\"max_processes\":1}}"
                .getBytes(StandardCharsets.UTF_8));
    assertFalse(Attenuation.attenuates(exec, ceiling), "the conservative ceiling has no exec");
    assertTrue(Attenuation.attenuates(Grants.empty(), ceiling));
    assertFalse(group.allowsEnvironment("build"));
    // as root the daemon's own user is root: no separate rule
    assertEquals(2, p.orDefault(false, 0, 4).rules().size());
  }

  @Test
  void everyRuleFieldIsRead() {
    NodePolicy p =
        parse(
                "{\"max_concurrent_units\":4,\"policy\":{\"rules\":[{\"name\":\"team-a\","
                    + "\"uids\":[1000,1001],\"users\":[\"alice\"],\"gids\":[50],"
                    + "\"groups\":[\"builders\"],\"ceiling\":{\"compute\":{\"cpu_time_ms\":100}},"
                    + "\"max_module_bytes\":4096,\"max_concurrent_runs\":3,"
                    + "\"environments\":[\"build\",\"*\"]},"
                    + "{\"uids\":[0],\"ceiling\":\"unrestricted\"}]}}")
            .policy();
    assertTrue(p.configured());
    assertEquals(p, p.orDefault(true, 5, 4), "a configured policy is never replaced");
    NodePolicy.Rule a = p.rules().get(0);
    assertEquals("team-a", a.name());
    assertEquals(Set.of(1000L, 1001L), a.uids());
    assertEquals(Set.of("alice"), a.users());
    assertEquals(Set.of(50L), a.gids());
    assertEquals(Set.of("builders"), a.groups());
    assertEquals(100, ((NodePolicy.Ceiling.Bounded) a.ceiling()).grants().compute().cpuTimeMs());
    assertEquals(4096, a.maxModuleBytes());
    assertEquals(3, a.maxConcurrentRuns());
    assertTrue(a.allowsEnvironment("anything"));
    NodePolicy.Rule b = p.rules().get(1);
    assertEquals("policy.rules[1]", b.name());
    assertInstanceOf(NodePolicy.Ceiling.Unrestricted.class, b.ceiling());
    assertEquals(NodePolicy.DEFAULT_MAX_MODULE_BYTES, b.maxModuleBytes());
    assertEquals(4, b.maxConcurrentRuns(), "defaults to the node's bound");
    assertFalse(b.allowsEnvironment("build"), "no environments unless named");
  }

  @Test
  void mistakesAreRefusedWithTheirPath() {
    assertTrue(refusal("{\"policy\":{\"rule\":[]}}").contains("$.policy"));
    assertTrue(refusal("{\"policy\":{}}").contains("$.policy.rules"));
    assertTrue(
        refusal("{\"policy\":{\"rules\":[{\"uids\":[1],\"ceiling\":\"unrestricted\",\"x\":1}]}}")
            .contains("$.policy.rules[0]"));
    assertTrue(
        refusal("{\"policy\":{\"rules\":[{\"uids\":[1]}]}}")
            .contains("$.policy.rules[0].ceiling: missing"));
    assertTrue(
        refusal("{\"policy\":{\"rules\":[{\"ceiling\":\"unrestricted\"}]}}")
            .contains("at least one of uids"));
    assertTrue(
        refusal("{\"policy\":{\"rules\":[{\"uids\":[-1],\"ceiling\":\"unrestricted\"}]}}")
            .contains("$.policy.rules[0].uids[0]"));
    assertTrue(
        refusal("{\"policy\":{\"rules\":[{\"uids\":[1],\"ceiling\":\"everything\"}]}}")
            .contains("$.policy.rules[0].ceiling"));
    String bad =
        refusal(
            "{\"policy\":{\"rules\":[{\"uids\":[1],\"ceiling\":{\"storage\":{\"raed\":[]}}}]}}");
    assertTrue(bad.startsWith("$.policy.rules[0].ceiling.storage"), bad);
    assertTrue(
        refusal(
                "{\"max_concurrent_units\":2,\"policy\":{\"rules\":[{\"uids\":[1],"
                    + "\"ceiling\":\"unrestricted\",\"max_concurrent_runs\":3}]}}")
            .contains("max_concurrent_runs"));
    assertTrue(
        refusal(
                "{\"policy\":{\"rules\":[{\"uids\":[1],\"ceiling\":\"unrestricted\","
                    + "\"max_module_bytes\":0}]}}")
            .contains("max_module_bytes"));
    assertTrue(
        refusal(
                "{\"policy\":{\"rules\":[{\"name\":\"a\",\"uids\":[1],\"ceiling\":\"unrestricted\"},"
                    + "{\"name\":\"a\",\"uids\":[2],\"ceiling\":\"unrestricted\"}]}}")
            .contains("$.policy.rules[1].name"));
    assertTrue(
        refusal("{\"policy\":{\"rules\":[{\"users\":[\"a:b\"],\"ceiling\":\"unrestricted\"}]}}")
            .contains("$.policy.rules[0].users[0]"));
  }
}
