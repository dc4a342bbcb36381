package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** The four JCP records of WIRE.md §2.11: strict parsing, signatures and both hash chains. */
class JcpRecordsTest {
  static final String EMPTY_GRANTS =
      "{\"compute\":{\"cpu_time_ms\":0,\"devices\":[],\"energy_budget_uj\":0,\"memory_bytes\":0},"
          + "\"host\":{\"clock\":false,\"inference\":false,\"logging\":false,\"random\":false},"
          + "\"kv\":{\"prefixes\":[],\"read\":false,\"write\":false},"
          + "\"network\":{\"inbound\":false,\"outbound\":[]},"
          + "\"storage\":{\"delete\":[],\"read\":[],\"write\":[]}}";
  static final String EMPTY_ID = "9eb3c67383235c3769a0821dd660df26e48e96934ab5c224cb2391f0f7796406";

  static final SigningKey ISSUER = SeededKeys.counting(0x10);
  static final SigningKey HOLDER = SeededKeys.counting(0x20);
  static final SigningKey AGENT = SeededKeys.counting(0x30);

  static JcpMintPolicy policy() {
    return new JcpMintPolicy(
        ISSUER.publicKey().hex(),
        HOLDER.publicKey().hex(),
        EMPTY_ID,
        CanonicalJson.parse(EMPTY_GRANTS),
        3,
        1000,
        2,
        List.of(new JcpMintPolicy.Trigger("push", CanonicalJson.parse("{\"repo\":\"sandboxd\"}"))),
        2_000_000_000_000L);
  }

  static List<Envelope> children(Envelope policy, int n) {
    List<Envelope> out = new ArrayList<>();
    String prev = null;
    for (int i = 0; i < n; i++) {
      JcpChild c =
          new JcpChild(
              policy.address(),
              i,
              prev,
              Envelope.addressOf(CanonicalJson.parse("{\"type\":\"push\",\"n\":" + i + "}")),
              CanonicalJson.parse(EMPTY_GRANTS),
              EMPTY_ID,
              1000L + i);
      Envelope e = Envelope.sign(c.toCore(), HOLDER);
      out.add(e);
      prev = e.address();
    }
    return out;
  }

  static List<Envelope> checkpoints(String runId, int n, SigningKey agent) {
    List<Envelope> out = new ArrayList<>();
    String prev = null;
    for (int i = 0; i < n; i++) {
      JcpCheckpoint c =
          new JcpCheckpoint(
              runId, i, prev, Blake3.hex(new byte[] {(byte) i}), EMPTY_ID, agent.publicKey().hex());
      Envelope e = Envelope.sign(c.toCore(), agent);
      out.add(e);
      prev = e.address();
    }
    return out;
  }

  @Test
  void eachRecordRoundTripsThroughItsCanonicalCore() {
    JcpMintPolicy p = policy();
    assertEquals(p.toCore(), JcpMintPolicy.fromCore(p.toCore()).toCore());
    Envelope pe = Envelope.sign(p.toCore(), ISSUER);
    JcpChild c = JcpChild.fromCore(children(pe, 1).get(0).core());
    assertEquals(EMPTY_ID, c.grantsId());
    assertEquals(c.toCore(), JcpChild.fromCore(c.toCore()).toCore());
    JcpCheckpoint k = JcpCheckpoint.fromCore(checkpoints("r1", 1, AGENT).get(0).core());
    assertEquals(k.toCore(), JcpCheckpoint.fromCore(k.toCore()).toCore());
    JcpAmendment a =
        new JcpAmendment(
            k.state(), ISSUER.publicKey().hex(), CanonicalJson.parse(EMPTY_GRANTS), EMPTY_ID, "x");
    assertEquals(a.toCore(), JcpAmendment.fromCore(a.toCore()).toCore());
    // Canonical bytes come from CanonicalJson: keys sorted, the schema first among s-keys.
    String policyBytes = CanonicalJson.canonicalString(p.toCore());
    assertTrue(policyBytes.startsWith("{\"ceiling\":{\"compute\""), policyBytes);
    assertTrue(policyBytes.contains("\"rate\":{\"max\":2,\"window_ms\":1000}"), policyBytes);
  }

  @Test
  void strictParsingNamesTheFieldAtFault() {
    ObjectNode policy = policy().toCore();
    assertEquals(
        "mint-policy.extra: unknown field",
        Refusal.of(JcpMintPolicy::fromCore, policy, c -> c.put("extra", 1)));
    assertEquals(
        "mint-policy.holder: missing",
        Refusal.of(JcpMintPolicy::fromCore, policy, c -> c.remove("holder")));
    assertRefused(
        "mint-policy.rate.max: negative",
        JcpMintPolicy::fromCore,
        policy,
        c -> ((ObjectNode) c.get("rate")).put("max", -1));
    assertRefused(
        "mint-policy.rate.window_ms",
        JcpMintPolicy::fromCore,
        policy,
        c -> ((ObjectNode) c.get("rate")).put("window_ms", 0));
    assertRefused(
        "mint-policy.triggers", JcpMintPolicy::fromCore, policy, c -> c.putArray("triggers"));
    assertRefused(
        "mint-policy.issuer",
        JcpMintPolicy::fromCore,
        policy,
        c -> c.put("issuer", ISSUER.publicKey().hex().toUpperCase(java.util.Locale.ROOT)));
    assertRefused(
        "mint-policy.schema",
        JcpMintPolicy::fromCore,
        policy,
        c -> c.put("schema", "jcp.mint-policy/2"));

    Envelope pe = Envelope.sign(policy().toCore(), ISSUER);
    JsonNode child = children(pe, 1).get(0).core();
    assertRefused(
        "child.grants_id", JcpChild::fromCore, child, c -> c.put("grants_id", "00".repeat(32)));
    assertRefused("child.prev", JcpChild::fromCore, child, c -> c.put("prev", "00".repeat(32)));
    assertRefused(
        "checkpoint.seq",
        JcpCheckpoint::fromCore,
        checkpoints("r", 1, AGENT).get(0).core(),
        c -> c.put("seq", 1.5));
    assertRefused(
        "amendment.reason",
        JcpAmendment::fromCore,
        new JcpAmendment(
                EMPTY_ID, ISSUER.publicKey().hex(), CanonicalJson.parse(EMPTY_GRANTS), EMPTY_ID, "")
            .toCore(),
        c -> c.put("reason", "r".repeat(JcpAmendment.MAX_REASON_CHARS + 1)));
  }

  /** {@code reader} refuses {@code core} changed by {@code change}, naming {@code prefix} first. */
  private static <T> void assertRefused(
      String prefix, Function<JsonNode, T> reader, JsonNode core, Consumer<ObjectNode> change) {
    String message = Refusal.of(reader, (ObjectNode) core, change);
    assertTrue(message.startsWith(prefix), message);
  }

  @Test
  void aPolicyVerifiesOnlyUnderItsIssuer() {
    Envelope good = Envelope.sign(policy().toCore(), ISSUER);
    assertEquals(policy().toCore(), JcpMintPolicy.verified(good).toCore());
    Envelope byHolder = Envelope.sign(policy().toCore(), HOLDER);
    assertTrue(
        assertThrows(AttestException.class, () -> JcpMintPolicy.verified(byHolder))
            .getMessage()
            .contains("expected signer"));
  }

  @Test
  void eventsNeedATypeAndHashByTheirCanonicalBytes() {
    JcpEvent a = JcpEvent.parse("{\"type\":\"push\",\"repo\":\"x\"}".getBytes());
    JcpEvent b = JcpEvent.parse("{ \"repo\" : \"x\", \"type\" : \"push\" }".getBytes());
    assertEquals(a.address(), b.address());
    assertEquals("push", a.type());
    assertThrows(AttestException.class, () -> JcpEvent.parse("{\"repo\":1}".getBytes()));
    assertThrows(
        AttestException.class, () -> JcpEvent.parse("{\"type\":\"p\",\"x\":1.5}".getBytes()));
    assertThrows(AttestException.class, () -> JcpEvent.parse("[1]".getBytes()));
    JcpMintPolicy.Trigger t = policy().triggers().get(0);
    assertFalse(t.matches(a.doc()));
    assertTrue(
        t.matches(JcpEvent.parse("{\"type\":\"push\",\"repo\":\"sandboxd\"}".getBytes()).doc()));
    assertFalse(
        t.matches(JcpEvent.parse("{\"type\":\"pull\",\"repo\":\"sandboxd\"}".getBytes()).doc()));
  }

  @Test
  void childChainVerifiesAndAnyDamageIsFoundAtItsLink() {
    Envelope pe = Envelope.sign(policy().toCore(), ISSUER);
    List<Envelope> chain = children(pe, 4);
    JcpChain.Verdict ok = JcpChain.children(pe, chain);
    assertEquals(new JcpChain.Verdict.Valid(4, chain.get(3).address()), ok);

    // Dropping a link, signing by the issuer instead of the holder, or another policy: each fails.
    List<Envelope> gap = new ArrayList<>(chain);
    gap.remove(1);
    assertEquals(1, ((JcpChain.Verdict.Invalid) JcpChain.children(pe, gap)).seq());
    List<Envelope> wrongSigner = new ArrayList<>(chain);
    wrongSigner.set(2, Envelope.sign(chain.get(2).core(), ISSUER));
    JcpChain.Verdict.Invalid ws =
        assertInstanceOf(JcpChain.Verdict.Invalid.class, JcpChain.children(pe, wrongSigner));
    assertEquals(2, ws.seq());
    assertTrue(ws.reason().contains("expected signer"), ws.reason());
    Envelope otherPolicy = Envelope.sign(policy().toCore().put("max_children", 9), ISSUER);
    assertEquals(0, ((JcpChain.Verdict.Invalid) JcpChain.children(otherPolicy, chain)).seq());

    // Flipping any one byte of any one core (seeded) is found at that link.
    long seed = 15;
    Random r = new Random(seed);
    for (int t = 0; t < 20; t++) {
      int k = r.nextInt(chain.size());
      List<Envelope> damaged = new ArrayList<>(chain);
      Envelope e = chain.get(k);
      ObjectNode core = (ObjectNode) e.core().deepCopy();
      core.put("minted_ms", core.get("minted_ms").longValue() + 1 + r.nextInt(5));
      damaged.set(k, new Envelope(core, e.address(), e.signature(), e.publicKey()));
      JcpChain.Verdict v = JcpChain.children(pe, damaged);
      assertEquals(k, ((JcpChain.Verdict.Invalid) v).seq(), "seed " + seed + " try " + t);
    }
  }

  @Test
  void checkpointChainIsOneRunUnderOneAgent() {
    List<Envelope> chain = checkpoints("run-1", 3, AGENT);
    assertEquals(
        new JcpChain.Verdict.Valid(3, chain.get(2).address()), JcpChain.checkpoints(chain));
    List<Envelope> mixed = new ArrayList<>(chain);
    mixed.set(2, checkpoints("run-1", 3, ISSUER).get(2));
    assertEquals(2, ((JcpChain.Verdict.Invalid) JcpChain.checkpoints(mixed)).seq());
    List<Envelope> forged = new ArrayList<>(chain);
    forged.set(1, Envelope.sign(chain.get(1).core(), ISSUER));
    assertEquals(1, ((JcpChain.Verdict.Invalid) JcpChain.checkpoints(forged)).seq());
    List<Envelope> reordered = List.of(chain.get(1), chain.get(0));
    assertEquals(0, ((JcpChain.Verdict.Invalid) JcpChain.checkpoints(reordered)).seq());
  }

  @Test
  void theFixedKeysAreDistinct() {
    JsonNode ids =
        CanonicalJson.parse(
            "[\""
                + ISSUER.publicKey().hex()
                + "\",\""
                + HOLDER.publicKey().hex()
                + "\",\""
                + AGENT.publicKey().hex()
                + "\"]");
    assertEquals(3, new java.util.HashSet<>(List.of(ids.get(0), ids.get(1), ids.get(2))).size());
    assertArrayEquals(ISSUER.publicKey().raw(), SeededKeys.counting(0x10).publicKey().raw());
  }

  @Test
  void anAttestationNamesItsPolicyChildAndAmendmentsOnlyWhenItHasThem() {
    Attestation plain = RecordsTest.sampleAttestation(new Outcome.Completed());
    assertFalse(CanonicalJson.canonicalString(plain.toCore()).contains("\"jcp\""));
    Attestation withJcp = carrying(plain, new Attestation.Jcp(EMPTY_ID, EMPTY_ID, List.of()));
    String bytes = CanonicalJson.canonicalString(withJcp.toCore());
    assertTrue(bytes.contains("\"jcp\":{\"child\":\"" + EMPTY_ID + "\",\"policy\""), bytes);
    assertEquals(withJcp.toCore(), Attestation.fromCore(withJcp.toCore()).toCore());
    // An empty provenance is no provenance: the earlier bytes.
    Attestation empty = carrying(plain, new Attestation.Jcp(null, null, List.of()));
    assertEquals(
        CanonicalJson.canonicalString(plain.toCore()),
        CanonicalJson.canonicalString(empty.toCore()));
    ObjectNode bad = withJcp.toCore();
    ((ObjectNode) bad.get("jcp")).remove("child");
    assertThrows(AttestException.class, () -> Attestation.fromCore(bad));
  }

  /** {@code a} with {@code jcp} as its provenance. */
  private static Attestation carrying(Attestation a, Attestation.Jcp jcp) {
    return new Attestation(
        a.host(),
        a.tier(),
        a.grantsId(),
        a.receipt(),
        a.unit(),
        a.manifest(),
        a.journalRoot(),
        a.outcome(),
        a.clockGranted(),
        a.clockConstantMs(),
        a.probingDetected(),
        a.tamperingDetected(),
        a.teeReport(),
        a.issuedMs(),
        a.inputs(),
        a.outputs(),
        jcp);
  }
}
