package io.sandboxd.daemon.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.HostIdentity;
import io.sandboxd.attest.JcpAmendment;
import io.sandboxd.attest.JcpCheckpoint;
import io.sandboxd.attest.JcpChild;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The JCP part of verify on a chain made here: amended once between suspend and resume, its
 * attestation's {@code jcp.amendments} must list exactly the issuer-signed amendments given.
 */
class JcpEvidenceTest {
  static final String CHILD =
      "{\"compute\":{\"cpu_time_ms\":1000},\"host\":{\"logging\":true,\"random\":true}}";
  static final String TIGHTER = "{\"compute\":{\"cpu_time_ms\":1000},\"host\":{\"logging\":true}}";

  final SigningKey node = SigningKey.generate();
  final SigningKey issuer = SigningKey.generate();
  final SigningKey holder = SigningKey.generate();
  final SigningKey agent = SigningKey.generate();

  static Grants g(String json) {
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  static String h(String s) {
    return Blake3.hex(s.getBytes(StandardCharsets.UTF_8));
  }

  List<Envelope> segments() {
    RunSegment.SnapshotRef ref =
        new RunSegment.SnapshotRef(
            h("fs"), h("mem"), Blake3.hex(new byte[0]), g(CHILD).grantsId(), List.of(), h("j"));
    Object[][] plan = {
      {RunSegment.Kind.execute, g(CHILD).grantsId(), h("r0"), null},
      {RunSegment.Kind.suspend, g(CHILD).grantsId(), null, ref},
      {RunSegment.Kind.resume, g(TIGHTER).grantsId(), null, ref},
      {RunSegment.Kind.execute, g(TIGHTER).grantsId(), h("r1"), null}
    };
    List<Envelope> out = new ArrayList<>();
    String prev = null;
    for (int i = 0; i < plan.length; i++) {
      Envelope e =
          Envelope.sign(
              new RunSegment(
                      "run-1",
                      i,
                      (RunSegment.Kind) plan[i][0],
                      prev,
                      "h",
                      node.publicKey().hex(),
                      "S2",
                      (String) plan[i][1],
                      (String) plan[i][2],
                      (RunSegment.SnapshotRef) plan[i][3],
                      0,
                      Provenance.Estimator,
                      100 + i)
                  .toCore(),
              node);
      out.add(e);
      prev = e.address();
    }
    return out;
  }

  Envelope attestation(List<String> amendments, String policy, String child) {
    Attestation a =
        Attestation.builder()
            .host(new HostIdentity("h", node.publicKey().hex(), "linux"))
            .tier("S2")
            .grantsId(g(TIGHTER).grantsId())
            .receipt(h("r1"))
            .unit(h("unit"))
            .journalRoot(h("j"))
            .outcome(new Outcome.Completed())
            .clockGranted(true)
            .issuedMs(200)
            .jcp(new Attestation.Jcp(policy, child, amendments))
            .build();
    return Envelope.sign(a.toCore(), node);
  }

  @Test
  void theAttestationMustListTheAmendmentsGiven() {
    List<Envelope> segs = segments();
    Envelope policy =
        Envelope.sign(
            new JcpMintPolicy(
                    issuer.publicKey().hex(),
                    holder.publicKey().hex(),
                    g(CHILD).grantsId(),
                    CanonicalJson.parse(CHILD),
                    5,
                    1,
                    5,
                    List.of(new JcpMintPolicy.Trigger("t", CanonicalJson.parse("{}"))),
                    1_000_000)
                .toCore(),
            issuer);
    Envelope child =
        Envelope.sign(
            new JcpChild(
                    policy.address(),
                    0,
                    null,
                    h("event"),
                    g(CHILD).canonicalTree(),
                    g(CHILD).grantsId(),
                    50)
                .toCore(),
            holder);
    Envelope cp =
        Envelope.sign(
            new JcpCheckpoint(
                    "run-1",
                    0,
                    null,
                    segs.get(1).address(),
                    g(CHILD).grantsId(),
                    agent.publicKey().hex())
                .toCore(),
            agent);
    Envelope amendment =
        Envelope.sign(
            new JcpAmendment(
                    cp.address(),
                    issuer.publicKey().hex(),
                    g(TIGHTER).canonicalTree(),
                    g(TIGHTER).grantsId(),
                    "tighten")
                .toCore(),
            issuer);
    List<Envelope> jcp = List.of(policy, child, cp, amendment);
    List<Envelope> records = new ArrayList<>(segs);
    records.add(attestation(List.of(amendment.address()), policy.address(), child.address()));
    List<String> lines = new ArrayList<>();
    assertEquals(Optional.empty(), JcpEvidence.check(records, jcp, lines));
    assertTrue(lines.get(0).contains("run run-1: 1 amendment(s)"), lines.toString());

    List<Envelope> silent = new ArrayList<>(segs);
    silent.add(attestation(List.of(), policy.address(), child.address()));
    Optional<String> bad = JcpEvidence.check(silent, jcp, new ArrayList<>());
    assertTrue(bad.isPresent() && bad.get().contains("jcp.amendments []"), bad.toString());

    // JCP records with no chain to check them against are unusable as evidence.
    assertTrue(JcpEvidence.check(List.of(), jcp, new ArrayList<>()).isPresent());
  }
}
