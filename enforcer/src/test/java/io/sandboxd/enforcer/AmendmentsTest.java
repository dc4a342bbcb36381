package io.sandboxd.enforcer;

import static io.sandboxd.enforcer.JcpFixtures.AGENT;
import static io.sandboxd.enforcer.JcpFixtures.CEILING;
import static io.sandboxd.enforcer.JcpFixtures.CHILD;
import static io.sandboxd.enforcer.JcpFixtures.ISSUER;
import static io.sandboxd.enforcer.JcpFixtures.PARENT;
import static io.sandboxd.enforcer.JcpFixtures.STRANGER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpAmendment;
import io.sandboxd.attest.SigningKey;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The amendment decision of WIRE.md §2.11: one test per refusal rule, and the accepted case. */
class AmendmentsTest {
  private static final List<Envelope> CHAIN =
      JcpFixtures.checkpoints("run-1", 2, CEILING.grantsId());
  private static final Amendments.RunState RUN =
      new Amendments.RunState(
          ISSUER.publicKey().hex(), CHAIN, Map.of(CEILING.grantsId(), CEILING), CEILING, Set.of());

  static Envelope amendment(String checkpoint, Grants g, SigningKey signer, String issuerHex) {
    return Envelope.sign(
        new JcpAmendment(checkpoint, issuerHex, g.canonicalTree(), g.grantsId(), "tighten")
            .toCore(),
        signer);
  }

  static Envelope byIssuer(Grants g) {
    return amendment(CHAIN.get(1).address(), g, ISSUER, ISSUER.publicKey().hex());
  }

  private static AmendmentRule refusal(Amendments.Verdict v) {
    return assertInstanceOf(Amendments.Refused.class, v).rule();
  }

  @Test
  void theIssuerMayTighten() {
    Envelope e = byIssuer(CHILD);
    Amendments.Accepted a = assertInstanceOf(Amendments.Accepted.class, Amendments.decide(e, RUN));
    assertEquals(CHILD, a.newGrants());
    assertEquals(e.address(), a.address());
    assertEquals(CHILD.grantsId(), a.amendment().newGrantsId());
    // Same grants (no change) is not a widening.
    assertInstanceOf(Amendments.Accepted.class, Amendments.decide(byIssuer(CEILING), RUN));
  }

  @Test
  void anAmendmentSignedByTheAgentIsRefused() {
    Envelope e = amendment(CHAIN.get(1).address(), CHILD, AGENT, AGENT.publicKey().hex());
    assertEquals("distinct_principal", refusal(Amendments.decide(e, RUN)).rule());
    // Even naming the issuer in the core: the signer is the agent.
    Envelope e2 = amendment(CHAIN.get(1).address(), CHILD, AGENT, ISSUER.publicKey().hex());
    assertEquals("distinct_principal", refusal(Amendments.decide(e2, RUN)).rule());
    // An issuer that is the agent is no separation of duties either.
    Amendments.RunState agentIssued =
        new Amendments.RunState(
            AGENT.publicKey().hex(), CHAIN, RUN.grantsById(), CEILING, Set.of());
    assertEquals("distinct_principal", refusal(Amendments.decide(e, agentIssued)).rule());
  }

  @Test
  void anAmendmentByAStrangerOrForARunWithoutIssuerIsRefused() {
    Envelope e = amendment(CHAIN.get(1).address(), CHILD, STRANGER, STRANGER.publicKey().hex());
    AmendmentRule r = refusal(Amendments.decide(e, RUN));
    assertEquals(
        new AmendmentRule.NotIssuer(STRANGER.publicKey().hex(), ISSUER.publicKey().hex()), r);
    // Signed by a stranger while naming the issuer: the signature is not the issuer's.
    Envelope e2 = amendment(CHAIN.get(1).address(), CHILD, STRANGER, ISSUER.publicKey().hex());
    assertEquals("issuer", refusal(Amendments.decide(e2, RUN)).rule());
    Amendments.RunState none =
        new Amendments.RunState(null, CHAIN, RUN.grantsById(), CEILING, Set.of());
    assertEquals("issuer", refusal(Amendments.decide(byIssuer(CHILD), none)).rule());
  }

  @Test
  void aWideningAmendmentIsRefusedNamingThePart() {
    AmendmentRule r = refusal(Amendments.decide(byIssuer(PARENT), RUN));
    assertEquals("tighten_only", r.rule());
    assertEquals("$.compute.cpu_time_ms", ((AmendmentRule.Widens) r).wider().path());
    // Within the grants at the checkpoint but wider than an amendment applied since: refused too.
    Amendments.RunState tightened =
        new Amendments.RunState(RUN.issuer(), CHAIN, RUN.grantsById(), CHILD, Set.of());
    AmendmentRule now = refusal(Amendments.decide(byIssuer(CEILING), tightened));
    assertEquals("tighten_only", now.rule());
    assertEquals("now", ((AmendmentRule.Widens) now).against());
  }

  @Test
  void anAmendmentForACheckpointNotInTheChainIsRefused() {
    Envelope other = JcpFixtures.checkpoints("run-2", 1, CEILING.grantsId()).get(0);
    Envelope e = amendment(other.address(), CHILD, ISSUER, ISSUER.publicKey().hex());
    assertEquals(
        new AmendmentRule.CheckpointNotInChain(other.address()),
        refusal(Amendments.decide(e, RUN)));
    // A damaged chain is no verified chain: nothing in it can be targeted.
    Envelope c1 = CHAIN.get(1);
    ObjectNode core = (ObjectNode) c1.core().deepCopy();
    core.put("run_id", "run-x");
    Amendments.RunState damaged =
        new Amendments.RunState(
            RUN.issuer(),
            List.of(CHAIN.get(0), new Envelope(core, c1.address(), c1.signature(), c1.publicKey())),
            RUN.grantsById(),
            CEILING,
            Set.of());
    assertEquals(
        "checkpoint_in_chain", refusal(Amendments.decide(byIssuer(CHILD), damaged)).rule());
  }

  @Test
  void aReplayedAmendmentIsRefused() {
    Envelope e = byIssuer(CHILD);
    Amendments.RunState applied =
        new Amendments.RunState(RUN.issuer(), CHAIN, RUN.grantsById(), CHILD, Set.of(e.address()));
    assertEquals(new AmendmentRule.Replayed(e.address()), refusal(Amendments.decide(e, applied)));
  }

  @Test
  void aDamagedOrNonCanonicalRecordIsRefusedAsARecord() {
    Envelope e = byIssuer(CHILD);
    ObjectNode core = (ObjectNode) e.core().deepCopy();
    core.put("reason", "changed");
    Envelope forged = new Envelope(core, e.address(), e.signature(), e.publicKey());
    assertEquals("record", refusal(Amendments.decide(forged, RUN)).rule());
    // new_grants with an unsorted list hashes to an id that is not the grant's grants_id.
    ObjectNode g = (ObjectNode) CHILD.canonicalTree().deepCopy();
    ((ObjectNode) g.get("storage")).putArray("read").add("data/z/**").add("data/a/**");
    Envelope unsorted =
        Envelope.sign(
            new JcpAmendment(
                    CHAIN.get(1).address(), ISSUER.publicKey().hex(), g, Envelope.addressOf(g), "x")
                .toCore(),
            ISSUER);
    assertEquals("record", refusal(Amendments.decide(unsorted, RUN)).rule());
  }
}
