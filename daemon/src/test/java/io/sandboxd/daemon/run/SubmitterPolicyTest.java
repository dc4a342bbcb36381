package io.sandboxd.daemon.run;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.config.ConfigException;
import io.sandboxd.config.DaemonConfig;
import io.sandboxd.config.NodePolicy;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Rules matched by uid, user, gid and group membership; each limit refused naming its rule. */
class SubmitterPolicyTest {
  @TempDir Path dir;
  Accounts accounts;

  @BeforeEach
  void accounts() throws Exception {
    Path passwd = dir.resolve("passwd");
    Path group = dir.resolve("group");
    Files.writeString(
        passwd,
        "root:x:0:0:root:/root:/bin/sh\n"
            + "alice:x:1000:1000::/home/alice:/bin/sh\n"
            + "bob:x:1001:1001::/home/bob:/bin/sh\n"
            + "carol:x:1002:700::/home/carol:/bin/sh\n"
            + "# comment\nbroken line\n");
    Files.writeString(
        group, "root:x:0:\nbuilders:x:700:bob\nalice:x:1000:\nbob:x:1001:\nempty:x:800:\n");
    accounts = Accounts.read(passwd, group);
  }

  static NodePolicy policy(String rules) {
    return DaemonConfig.parse(
            ("{\"max_concurrent_units\":4,\"policy\":{\"rules\":" + rules + "}}")
                .getBytes(StandardCharsets.UTF_8))
        .policy();
  }

  static Grants grants(String json) {
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  static Caller uid(long uid, long gid) {
    return new Caller(uid, gid, 4242);
  }

  @Test
  void theFirstMatchingRuleDecides() {
    SubmitterPolicy p =
        SubmitterPolicy.resolve(
            policy(
                "[{\"name\":\"alice\",\"users\":[\"alice\"],\"ceiling\":\"unrestricted\"},"
                    + "{\"name\":\"builders\",\"groups\":[\"builders\"],\"ceiling\":{}},"
                    + "{\"name\":\"by-gid\",\"gids\":[1001],\"ceiling\":{}},"
                    + "{\"name\":\"by-uid\",\"uids\":[5000],\"ceiling\":{}}]"),
            accounts);
    assertEquals("alice", p.ruleFor(uid(1000, 1000)).name());
    // bob is a listed member of builders (his process's primary gid is his own group)
    assertEquals("builders", p.ruleFor(uid(1001, 1001)).name());
    // carol's primary group is builders
    assertEquals("builders", p.ruleFor(uid(1002, 700)).name());
    // any process whose gid is 1001, whoever it is
    assertEquals("by-gid", p.ruleFor(uid(3000, 1001)).name());
    assertEquals("by-uid", p.ruleFor(uid(5000, 5000)).name());
    PolicyDeniedException none =
        assertThrows(PolicyDeniedException.class, () -> p.ruleFor(uid(6000, 6000)));
    assertTrue(none.getMessage().contains("uid 6000") && none.getMessage().contains("no rule"));
    assertThrows(PolicyDeniedException.class, () -> p.ruleFor(Caller.UNKNOWN));
  }

  @Test
  void eachLimitIsRefusedNamingTheRule() {
    SubmitterPolicy p =
        SubmitterPolicy.resolve(
            policy(
                "[{\"name\":\"no-exec\",\"uids\":[1000],\"max_module_bytes\":100,"
                    + "\"max_concurrent_runs\":2,\"environments\":[\"build\"],"
                    + "\"ceiling\":{\"compute\":{\"cpu_time_ms\":1000},"
                    + "\"process\":{\"exec\":false}}}]"),
            accounts);
    Caller alice = uid(1000, 1000);
    NodePolicy.Rule r = p.ruleFor(alice);
    assertDoesNotThrow(() -> SubmitterPolicy.checkModule(r, alice, 100));
    String big =
        assertThrows(PolicyDeniedException.class, () -> SubmitterPolicy.checkModule(r, alice, 101))
            .getMessage();
    assertTrue(big.contains("\"no-exec\"") && big.contains("101 bytes"), big);
    assertDoesNotThrow(
        () -> SubmitterPolicy.checkGrants(r, alice, grants("{\"compute\":{\"cpu_time_ms\":9}}")));
    String exec =
        assertThrows(
                PolicyDeniedException.class,
                () ->
                    SubmitterPolicy.checkGrants(
                        r,
                        alice,
                        grants(
                            "{\"process\":{\"exec\":true,\"programs\":[\"ls\"],"
                                + "\"max_processes\":1}}")))
            .getMessage();
    assertTrue(exec.contains("\"no-exec\"") && exec.contains("$.process.exec"), exec);
    assertDoesNotThrow(() -> SubmitterPolicy.checkEnvironment(r, alice, "build"));
    assertDoesNotThrow(() -> SubmitterPolicy.checkEnvironment(r, alice, ""));
    assertThrows(
        PolicyDeniedException.class, () -> SubmitterPolicy.checkEnvironment(r, alice, "prod"));
    SubmitterPolicy.Slot one = p.acquire(r, alice);
    SubmitterPolicy.Slot two = p.acquire(r, alice);
    String busy = assertThrows(PolicyLimitException.class, () -> p.acquire(r, alice)).getMessage();
    assertTrue(busy.contains("\"no-exec\"") && busy.contains("2 runs in flight"), busy);
    // another uid under the same rule counts on its own
    p.acquire(r, uid(1001, 1001)).close();
    one.close();
    one.close(); // closing twice frees one place only
    SubmitterPolicy.Slot three = p.acquire(r, alice);
    assertThrows(PolicyLimitException.class, () -> p.acquire(r, alice));
    two.close();
    three.close();
  }

  @Test
  void unknownNamesRefuseAConfiguredPolicyButNotTheDefault() {
    String user =
        assertThrows(
                ConfigException.class,
                () ->
                    SubmitterPolicy.resolve(
                        policy("[{\"users\":[\"mallory\"],\"ceiling\":\"unrestricted\"}]"),
                        accounts))
            .getMessage();
    assertTrue(user.contains("$.policy.rules[0].users") && user.contains("mallory"), user);
    assertThrows(
        ConfigException.class,
        () ->
            SubmitterPolicy.resolve(
                policy("[{\"groups\":[\"nogroup\"],\"ceiling\":\"unrestricted\"}]"), accounts));
    // the system default names group sandboxd, absent here: root and the daemon's user still work
    SubmitterPolicy sys = SubmitterPolicy.resolve(NodePolicy.system(1000, 4), accounts);
    assertEquals("root", sys.ruleFor(uid(0, 0)).name());
    assertEquals("daemon-user", sys.ruleFor(uid(1000, 1000)).name());
    assertThrows(PolicyDeniedException.class, () -> sys.ruleFor(uid(1001, 1001)));
    SubmitterPolicy dev = SubmitterPolicy.resolve(NodePolicy.dev(1001, 4), accounts);
    assertEquals("dev-own-user", dev.ruleFor(uid(1001, 1001)).name());
    assertThrows(PolicyDeniedException.class, () -> dev.ruleFor(uid(0, 0)));
  }

  @Test
  void theSystemDefaultAdmitsGroupMembersUnderTheConservativeCeiling() throws Exception {
    Files.writeString(dir.resolve("group"), "sandboxd:x:900:bob\n");
    Accounts a = Accounts.read(dir.resolve("passwd"), dir.resolve("group"));
    SubmitterPolicy sys = SubmitterPolicy.resolve(NodePolicy.system(0, 4), a);
    Caller bob = uid(1001, 1001);
    NodePolicy.Rule r = sys.ruleFor(bob);
    assertEquals("group-sandboxd", r.name());
    assertDoesNotThrow(
        () ->
            SubmitterPolicy.checkGrants(
                r,
                bob,
                grants("{\"compute\":{\"cpu_time_ms\":2000},\"host\":{\"logging\":true}}")));
    String egress =
        assertThrows(
                PolicyDeniedException.class,
                () ->
                    SubmitterPolicy.checkGrants(
                        r, bob, grants("{\"network\":{\"outbound\":[\"a.example:443\"]}}")))
            .getMessage();
    assertTrue(egress.contains("$.network.outbound[0]"), egress);
  }
}
