package io.sandboxd.enforcer;

import static io.sandboxd.enforcer.JcpFixtures.AGENT;
import static io.sandboxd.enforcer.JcpFixtures.HOLDER;
import static io.sandboxd.enforcer.JcpFixtures.ISSUER;
import static io.sandboxd.enforcer.JcpFixtures.STRANGER;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpAmendment;
import io.sandboxd.attest.JcpCheckpoint;
import io.sandboxd.attest.JcpChild;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The issue-23 part of vectors/standing/standing.json: a run's segment chain amended once between a
 * suspend and its resume, its JCP records in several variants with the verdict of {@link
 * AmendmentChain} (a valid tightening; a widening, a stranger's, a replayed and a missing amendment
 * refused), and the verdict of {@link ChildUse} on uses of a child whose policy bounds them.
 */
final class AmendmentChainVectors {
  private AmendmentChainVectors() {}

  /** The node that signs the segments: seed byte i = 0x50 + i. */
  static final SigningKey NODE = JcpFixtures.key(0x50);

  static final String RUN_ID = "run-amended-1";

  /** Within the child (no storage read): what the amendment tightens the run to. */
  static final String TIGHTER_JSON =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":10000000,\"cpu_time_ms\":1000,"
          + "\"memory_bytes\":16777216},\"host\":{\"logging\":true}}";

  static final long T0 = StandingVectors.T0;

  /** The child the run started under: the first of the policy's chain (grants CHILD). */
  static Envelope child() {
    return StandingVectors.children().get(0);
  }

  static String childId() {
    return JcpFixtures.CHILD.grantsId();
  }

  static String tighterId() {
    return JcpFixtures.grants(TIGHTER_JSON).grantsId();
  }

  /** execute, suspend (child grants), resume, execute (tighter grants), signed by NODE. */
  static List<Envelope> segments() {
    RunSegment.SnapshotRef ref =
        new RunSegment.SnapshotRef(
            hash("fs"), hash("memory"), Blake3.hex(new byte[0]), childId(), List.of(), hash("j"));
    List<Envelope> out = new ArrayList<>();
    Object[][] plan = {
      {RunSegment.Kind.execute, childId(), hash("receipt 0"), null},
      {RunSegment.Kind.suspend, childId(), null, ref},
      {RunSegment.Kind.resume, tighterId(), null, ref},
      {RunSegment.Kind.execute, tighterId(), hash("receipt 1"), null}
    };
    String prev = null;
    for (int i = 0; i < plan.length; i++) {
      RunSegment s =
          new RunSegment(
              RUN_ID,
              i,
              (RunSegment.Kind) plan[i][0],
              prev,
              "vector-node",
              NODE.publicKey().hex(),
              "S2",
              (String) plan[i][1],
              (String) plan[i][2],
              (RunSegment.SnapshotRef) plan[i][3],
              0,
              Provenance.Estimator,
              T0 + 10_000 + i);
      Envelope e = Envelope.sign(s.toCore(), NODE);
      out.add(e);
      prev = e.address();
    }
    return out;
  }

  /** The agent's checkpoint of the parked run (its head: the suspend). */
  static Envelope checkpoint() {
    return Envelope.sign(
        new JcpCheckpoint(
                RUN_ID, 0, null, segments().get(1).address(), childId(), AGENT.publicKey().hex())
            .toCore(),
        AGENT);
  }

  static Envelope amendment(String grantsJson, SigningKey signer, String reason) {
    Grants g = JcpFixtures.grants(grantsJson);
    return Envelope.sign(
        new JcpAmendment(
                checkpoint().address(),
                signer.publicKey().hex(),
                g.canonicalTree(),
                g.grantsId(),
                reason)
            .toCore(),
        signer);
  }

  /** One variant of the run's JCP records and what {@link AmendmentChain} says of it. */
  record ChainCase(String name, List<Envelope> jcp, AmendmentChain.Verdict expected) {}

  static List<ChainCase> chainCases() {
    List<Envelope> base = List.of(StandingVectors.policy(), child(), checkpoint());
    Envelope good = amendment(TIGHTER_JSON, ISSUER, "tighten");
    Envelope widens = amendment(JcpFixtures.CHILD_JSON, ISSUER, "widen back");
    Envelope stranger = amendment(TIGHTER_JSON, STRANGER, "tighten");
    List<ChainCase> c = new ArrayList<>();
    c.add(case_("tightening", base, List.of(good)));
    c.add(case_("widening-refused", base, List.of(good, widens)));
    c.add(case_("not-issuer-signed", base, List.of(stranger)));
    c.add(case_("replayed", base, List.of(good, good)));
    c.add(case_("missing-amendment", base, List.of()));
    return c;
  }

  private static ChainCase case_(String name, List<Envelope> base, List<Envelope> amendments) {
    List<Envelope> jcp = new ArrayList<>(base);
    jcp.addAll(amendments);
    return new ChainCase(name, jcp, AmendmentChain.verify(segments(), jcp));
  }

  /**
   * A run bundle's chain and JCP records (WIRE.md §2.13): the run parked after its suspend and
   * amended while parked (no segment names the new grants yet), the grants the bundle carries, and
   * whether an import takes it: only when the records are valid and leave exactly those grants in
   * force.
   */
  record BundleCase(
      String name, List<Envelope> jcp, String bundleGrantsId, AmendmentChain.Verdict expected) {
    boolean imports() {
      return expected instanceof AmendmentChain.Verdict.Valid v
          && v.grantsInForce().equals(bundleGrantsId);
    }
  }

  /** The parked chain a bundle carries: execute, suspend. */
  static List<Envelope> parkedSegments() {
    return segments().subList(0, 2);
  }

  /** An amendment by the issuer at a checkpoint of another run (a replay into this bundle). */
  static Envelope foreignAmendment() {
    Envelope other =
        Envelope.sign(
            new JcpCheckpoint(
                    "run-other-1", 0, null, hash("other head"), childId(), AGENT.publicKey().hex())
                .toCore(),
            AGENT);
    Grants g = JcpFixtures.grants(TIGHTER_JSON);
    return Envelope.sign(
        new JcpAmendment(
                other.address(),
                ISSUER.publicKey().hex(),
                g.canonicalTree(),
                g.grantsId(),
                "tighten")
            .toCore(),
        ISSUER);
  }

  static List<BundleCase> bundleCases() {
    List<Envelope> base = List.of(StandingVectors.policy(), child(), checkpoint());
    Envelope good = amendment(TIGHTER_JSON, ISSUER, "tighten");
    List<BundleCase> c = new ArrayList<>();
    c.add(bundle("amended-while-parked", base, List.of(good), tighterId()));
    c.add(bundle("amendment-removed", base, List.of(), tighterId()));
    c.add(
        bundle(
            "widening-amendment",
            base,
            List.of(good, amendment(JcpFixtures.CHILD_JSON, ISSUER, "widen back")),
            childId()));
    c.add(bundle("replayed-from-another-run", base, List.of(foreignAmendment()), tighterId()));
    c.add(bundle("never-amended", base, List.of(), childId()));
    return c;
  }

  private static BundleCase bundle(
      String name, List<Envelope> base, List<Envelope> amendments, String grantsId) {
    List<Envelope> jcp = new ArrayList<>(base);
    jcp.addAll(amendments);
    return new BundleCase(name, jcp, grantsId, AmendmentChain.verify(parkedSegments(), jcp));
  }

  /** A policy bounding each child to 60 s and 2 runs, and a child minted under it at T0. */
  static JcpMintPolicy usePolicy() {
    JcpMintPolicy p = JcpFixtures.policy();
    return new JcpMintPolicy(
        p.issuer(),
        p.holder(),
        p.parentGrantsId(),
        p.ceiling(),
        p.maxChildren(),
        p.rateWindowMs(),
        p.rateMax(),
        p.triggers(),
        p.notAfterMs(),
        new JcpMintPolicy.ChildUse(60_000, 2));
  }

  static Envelope usePolicyEnvelope() {
    return Envelope.sign(usePolicy().toCore(), ISSUER);
  }

  static Envelope useChild() {
    JcpChild c =
        new JcpChild(
            usePolicyEnvelope().address(),
            0,
            null,
            StandingVectors.event(0).address(),
            JcpFixtures.CHILD.canonicalTree(),
            childId(),
            T0);
    return Envelope.sign(c.toCore(), HOLDER);
  }

  /** One use of the child: what the node knows, when, and the verdict. */
  record UseCase(String name, ChildUse.State state, long nowMs) {}

  static List<UseCase> useCases() {
    List<UseCase> c = new ArrayList<>();
    c.add(new UseCase("first-use", new ChildUse.State(0, false, true), T0 + 1));
    c.add(new UseCase("last-use", new ChildUse.State(1, false, true), T0 + 1));
    c.add(new UseCase("uses-exhausted", new ChildUse.State(2, false, true), T0 + 1));
    c.add(new UseCase("at-expiry", new ChildUse.State(0, false, true), T0 + 60_000));
    c.add(new UseCase("expired", new ChildUse.State(0, false, true), T0 + 60_001));
    c.add(new UseCase("child-released", new ChildUse.State(0, true, true), T0 + 1));
    c.add(new UseCase("parent-released", new ChildUse.State(0, false, false), T0 + 1));
    c.add(
        new UseCase(
            "policy-expired", new ChildUse.State(0, false, true), JcpFixtures.NOT_AFTER_MS + 1));
    return c;
  }

  static String useVerdict(UseCase c) {
    Optional<ChildUse.Refused> r =
        ChildUse.check(usePolicy(), JcpChild.fromCore(useChild().core()), c.state(), c.nowMs());
    return r.map(ChildUse.Refused::rule).orElse("use");
  }

  /** Adds {@code amendment_chain} and {@code child_uses} to the vectors file's root. */
  static void addTo(ObjectNode root) {
    ObjectNode chain = root.putObject("amendment_chain");
    chain
        .putObject("node")
        .put("seed", StandingVectors.seedHex(0x50))
        .put("public_key", NODE.publicKey().hex());
    chain.putObject("tighter").put("input", TIGHTER_JSON).put("grants_id", tighterId());
    ArrayNode segs = chain.putArray("segments");
    segments().forEach(e -> StandingVectors.envelopeJson(segs.addObject(), e));
    ArrayNode cases = chain.putArray("cases");
    for (ChainCase c : chainCases()) {
      ObjectNode o = cases.addObject();
      o.put("name", c.name());
      ArrayNode jcp = o.putArray("jcp");
      c.jcp().forEach(e -> StandingVectors.envelopeJson(jcp.addObject(), e));
      if (c.expected() instanceof AmendmentChain.Verdict.Valid v) {
        o.put("expected", "valid");
        ArrayNode a = o.putArray("amendments");
        v.amendments().forEach(a::add);
      } else {
        AmendmentChain.Verdict.Invalid inv = (AmendmentChain.Verdict.Invalid) c.expected();
        o.put("expected", "invalid");
        o.put("where", inv.where());
        String rule =
            inv.reason().startsWith("amendment: rule ")
                ? inv.reason().substring("amendment: rule ".length()).split(":", 2)[0]
                : null;
        if (rule != null) {
          o.put("rule", rule);
        }
      }
    }
    ArrayNode bundles = chain.putArray("bundle_cases");
    for (BundleCase c : bundleCases()) {
      ObjectNode o = bundles.addObject();
      o.put("name", c.name());
      o.put("segments", parkedSegments().size());
      o.put("bundle_grants_id", c.bundleGrantsId());
      ArrayNode jcp = o.putArray("jcp");
      c.jcp().forEach(e -> StandingVectors.envelopeJson(jcp.addObject(), e));
      o.put("expected", c.imports() ? "import" : "refused");
      if (c.expected() instanceof AmendmentChain.Verdict.Valid v) {
        o.put("grants_in_force", v.grantsInForce());
        ArrayNode a = o.putArray("amendments");
        v.amendments().forEach(a::add);
      } else {
        AmendmentChain.Verdict.Invalid inv = (AmendmentChain.Verdict.Invalid) c.expected();
        o.put("where", inv.where());
        o.put("rule", inv.reason().substring("amendment: rule ".length()).split(":", 2)[0]);
      }
    }
    ObjectNode uses = root.putObject("child_uses");
    StandingVectors.envelopeJson(uses.putObject("policy"), usePolicyEnvelope());
    StandingVectors.envelopeJson(uses.putObject("child"), useChild());
    ArrayNode ucs = uses.putArray("cases");
    for (UseCase c : useCases()) {
      ucs.addObject()
          .put("name", c.name())
          .put("uses", c.state().uses())
          .put("child_released", c.state().childReleased())
          .put("parent_held", c.state().parentHeld())
          .put("now_ms", c.nowMs())
          .put("expected", useVerdict(c));
    }
  }

  private static String hash(String s) {
    return Blake3.hex(s.getBytes(StandardCharsets.UTF_8));
  }
}
