package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.DeviceClass;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The Enforcer's Java API beyond what the JSON vectors reach. */
class EnforcerTest {
  private static final String LS =
      "916034d2305fe62b6ee7afe5aab41a72cc1d3009d57680d58c8eca9604df56ae";
  private static final String CURL =
      "7637fe2b184ea9e8f1b4893be3dce80e372396a9a3d9b58715b5074d2bffb6d5";

  private static Grants grants(String json) {
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void emptyGrantBytesAndIdAreThoseOfWire22() {
    assertEquals(
        "{\"compute\":{\"cpu_time_ms\":0,\"devices\":[],\"energy_budget_uj\":0,\"memory_bytes\":0},"
            + "\"host\":{\"clock\":false,\"inference\":false,\"logging\":false,\"random\":false},"
            + "\"kv\":{\"prefixes\":[],\"read\":false,\"write\":false},"
            + "\"network\":{\"inbound\":false,\"outbound\":[]},"
            + "\"storage\":{\"delete\":[],\"read\":[],\"write\":[]}}",
        new String(Grants.empty().canonicalBytes(), StandardCharsets.UTF_8));
    assertEquals(
        "9eb3c67383235c3769a0821dd660df26e48e96934ab5c224cb2391f0f7796406",
        Grants.empty().grantsId());
    assertEquals(Grants.empty(), grants("{}"));
  }

  @Test
  void decisionsHaveNamesAndReasons() {
    Enforcer e = new Enforcer(Grants.empty());
    assertEquals("Allow", e.mayDispatch(DeviceClass.Cpu).name());
    assertEquals("", e.mayDispatch(DeviceClass.Cpu).reason());
    Decision d = e.mayDispatch(DeviceClass.Gpu);
    assertEquals("Denied", d.name());
    assertTrue(d.reason().contains("Gpu"), d.reason());
    assertFalse(d.allowed());
  }

  @Test
  void hostAccessorsExposeTheGrant() {
    Grants g =
        grants(
            "{\"host\":{\"clock\":true},\"compute\":{\"devices\":[\"Gpu\"],\"memory_bytes\":4096}}");
    assertTrue(g.host().clock());
    assertFalse(g.host().random());
    assertEquals(4096, g.compute().memoryBytes());
    assertEquals(Set.of(DeviceClass.Gpu), g.compute().devices());
    assertTrue(g.process().isEmpty());
  }

  @Test
  void execDenylistIsCheckedFirstAndByEveryStep() {
    Grants g =
        grants(
            "{\"process\":{\"exec\":true,\"programs\":[\"env\",\"renamed\"],\"max_processes\":2}}");
    Enforcer e = new Enforcer(g, Set.of("b3:" + CURL));
    ExecRequest viaEnv =
        ExecRequest.of(List.of(ExecStep.hashed("env", LS), ExecStep.hashed("renamed", CURL)));
    Decision d = e.mayExec(viaEnv, 0);
    assertInstanceOf(Decision.Denied.class, d);
    assertTrue(d.reason().contains("denylist"), d.reason());
    // the same chain without the denylisted binary is allowed
    assertTrue(
        e.mayExec(
                ExecRequest.of(List.of(ExecStep.hashed("env", LS), ExecStep.hashed("renamed", LS))),
                0)
            .allowed());
    // the denylist is absolute: it denies even without any process grant
    assertTrue(
        new Enforcer(Grants.empty(), Set.of("b3:" + CURL))
            .mayExec(ExecRequest.of(List.of(ExecStep.hashed("x", CURL))), 0)
            .reason()
            .contains("denylist"));
  }

  @Test
  void denylistTakesHashesOnly() {
    assertThrows(
        IllegalArgumentException.class, () -> new Enforcer(Grants.empty(), Set.of("curl")));
  }

  @Test
  void unresolvedRequestsAreDenied() {
    Grants g = grants("{\"process\":{\"exec\":true,\"programs\":[\"sh\"],\"max_processes\":2}}");
    ExecRequest r = new ExecRequest(List.of(ExecStep.named("sh")), Optional.of("shell syntax ';'"));
    Decision d = new Enforcer(g).mayExec(r, 0);
    assertTrue(d.reason().contains("shell syntax"), d.reason());
  }

  @Test
  void taintRunApi() {
    Grants g =
        grants(
            "{\"storage\":{\"read\":[\"inbox/**\"]},\"network\":{\"outbound\":[\"api.example.com:443\"]},"
                + "\"flow\":{\"untrusted\":[\"storage:inbox/**\"],\"open\":[]}}");
    Enforcer e = new Enforcer(g);
    RunTaint taint = new RunTaint();
    Endpoint api = Endpoint.parse("api.example.com:443");
    assertTrue(e.mayEgress(api, taint).allowed());
    Set<String> labels = e.taints(new FlowSource.StorageRead(StoragePath.parse("inbox/m1")));
    assertEquals(Set.of("storage:inbox/**"), labels);
    assertTrue(taint.add(labels));
    assertFalse(taint.add(labels), "adding the same labels again does not grow the taint");
    assertInstanceOf(Decision.Tainted.class, e.mayEgress(api, taint));
    assertInstanceOf(Decision.Denied.class, e.mayEgress(Endpoint.parse("x.example:443"), taint));
    assertInstanceOf(Decision.Tainted.class, e.mayReach(new FlowSink.Egress(api), taint));
    assertEquals(Set.of(), e.taints(new FlowSource.StorageRead(StoragePath.parse("data/x"))));
  }

  @Test
  void noFlowGrantNeverTaints() {
    Enforcer e = new Enforcer(grants("{\"storage\":{\"read\":[\"**\"]}}"));
    assertEquals(Set.of(), e.taints(new FlowSource.StorageRead(StoragePath.parse("any/thing"))));
    assertEquals(Set.of(), e.taints(new FlowSource.KvRead(Bytes.of(new byte[] {1}))));
  }

  @Test
  void sustainIoRejectsNegativeRates() {
    Enforcer e = new Enforcer(grants("{\"storage\":{\"read\":[\"**\"]}}"));
    assertTrue(e.maySustainIo(Long.MAX_VALUE, Long.MAX_VALUE).allowed());
    assertFalse(e.maySustainIo(-1, 0).allowed());
  }

  @Test
  void displayRejectsNegativeSize() {
    Enforcer e =
        new Enforcer(grants("{\"display\":{\"enabled\":true,\"max_width\":10,\"max_height\":10}}"));
    assertFalse(e.mayDisplay(-1, 5).allowed());
    assertTrue(e.mayDisplay(0, 0).allowed());
  }

  @Test
  void kvBytePrefixesAreUnsigned() {
    Enforcer e = new Enforcer(grants("{\"kv\":{\"read\":true,\"prefixes\":[[255,0]]}}"));
    assertTrue(e.mayKv(KvDirection.READ, new byte[] {(byte) 255, 0, 7}).allowed());
    assertFalse(e.mayKv(KvDirection.READ, new byte[] {(byte) 255}).allowed());
    assertFalse(e.mayKv(KvDirection.READ, new byte[] {127, 0}).allowed());
  }

  @Test
  void grantsBuiltInCodeAreCanonicalToo() {
    StorageGrant s =
        new StorageGrant(
            List.of(Glob.parse("b/**"), Glob.parse("a/*"), Glob.parse("b/**")),
            List.of(),
            List.of(),
            java.util.OptionalLong.of(5),
            java.util.OptionalLong.empty());
    assertEquals(List.of(Glob.parse("a/*"), Glob.parse("b/**")), s.read());
    Grants g = AttenuationTest.with(Grants.empty(), s);
    assertEquals(g.grantsId(), Grants.parse(g.canonicalBytes()).grantsId());
    assertTrue(new String(g.canonicalBytes(), StandardCharsets.UTF_8).contains("\"max_iops\":5"));
  }

  @Test
  void grantsErrorsNameThePath() {
    GrantsException e =
        assertThrows(
            GrantsException.class,
            () -> grants("{\"storage\":{\"read\":[\"a\",\"b\",\"c/../d\"]}}"));
    assertEquals("$.storage.read[2]", e.path());
    assertTrue(e.getMessage().startsWith("$.storage.read[2]: "), e.getMessage());
  }
}
