package io.sandboxd.enforcer;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpAmendment;
import io.sandboxd.attest.JcpChain;
import io.sandboxd.attest.JcpCheckpoint;
import io.sandboxd.attest.JcpChild;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.Verification;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The offline check of a run's JCP records beside its segment chain (WIRE.md §2.14): the mint
 * policy and child that issued the run's first grant name its issuer; the run's checkpoints chain
 * under the agent key; each amendment, replayed in the order given through {@link
 * Amendments#decide}, is signed by that issuer and only tightens; and every change of {@code
 * grants_id} along the segments is a resume onto the next amendment's {@code new_grants_id}. A
 * segment chain whose grants never change needs no JCP records.
 */
public final class AmendmentChain {
  private AmendmentChain() {}

  /** The outcome of {@link #verify}. */
  public sealed interface Verdict {
    /**
     * The records agree; {@code amendments} were checked for the run, and {@code grantsInForce} is
     * the grants_id they leave in force (the last amendment's, else the run's first grants): what a
     * parked run amended after its last segment resumes under, and a bundle of it must carry.
     */
    record Valid(String runId, List<String> amendments, String grantsInForce) implements Verdict {}

    /** {@code where} (a record's address or a segment's seq) fails for {@code reason}. */
    record Invalid(String where, String reason) implements Verdict {}
  }

  /**
   * Checks {@code jcp} (policies, children, checkpoints and amendments of one run, amendments in
   * the order they were applied) against the run's {@code segments} (verified already, in seq
   * order).
   */
  public static Verdict verify(List<Envelope> segments, List<Envelope> jcp) {
    if (segments.isEmpty()) {
      return new Verdict.Invalid("input", "JCP records without the run's segments");
    }
    List<RunSegment> segs = segments.stream().map(e -> RunSegment.fromCore(e.core())).toList();
    String runId = segs.get(0).runId();
    Map<String, JcpMintPolicy> policies = new LinkedHashMap<>();
    Map<String, JcpChild> children = new LinkedHashMap<>();
    List<Envelope> checkpoints = new ArrayList<>();
    List<Envelope> amendments = new ArrayList<>();
    Map<String, Envelope> childEnvelopes = new HashMap<>();
    for (Envelope e : jcp) {
      String schema = e.schema().orElse("");
      try {
        switch (schema) {
          case JcpMintPolicy.SCHEMA -> policies.put(e.address(), JcpMintPolicy.verified(e));
          case JcpChild.SCHEMA -> {
            children.put(e.address(), JcpChild.fromCore(e.core()));
            childEnvelopes.put(e.address(), e);
          }
          case JcpCheckpoint.SCHEMA -> {
            if (JcpCheckpoint.fromCore(e.core()).runId().equals(runId)) {
              checkpoints.add(e);
            }
          }
          case JcpAmendment.SCHEMA -> {
            JcpAmendment.fromCore(e.core());
            amendments.add(e);
          }
          default ->
              throw new AttestException("schema " + schema + " is not a JCP record (jcp.*/1)");
        }
      } catch (AttestException | IllegalArgumentException ex) {
        return new Verdict.Invalid(e.address(), ex.getMessage());
      }
    }
    if (JcpChain.checkpoints(checkpoints) instanceof JcpChain.Verdict.Invalid inv) {
      return new Verdict.Invalid(
          "checkpoint " + inv.seq() + " of run " + runId, "checkpoints: " + inv.reason());
    }
    Set<String> segmentAddresses = new HashSet<>();
    segments.forEach(s -> segmentAddresses.add(s.address()));
    for (Envelope cp : checkpoints) {
      String state = JcpCheckpoint.fromCore(cp.core()).state();
      if (!segmentAddresses.contains(state)) {
        return new Verdict.Invalid(
            cp.address(), "checkpoint.state " + state + " is no segment of run " + runId);
      }
    }
    // The issuer: the policy of the child whose grants the run started under, signed by its
    // holder. Without both, nothing can amend the run.
    String startId = segs.get(0).grantsId();
    String issuer = null;
    Grants start = null;
    for (Map.Entry<String, JcpChild> c : children.entrySet()) {
      if (!c.getValue().grantsId().equals(startId)) {
        continue;
      }
      JcpMintPolicy p = policies.get(c.getValue().policy());
      if (p == null) {
        return new Verdict.Invalid(
            c.getKey(), "child.policy " + c.getValue().policy() + " is not in the input");
      }
      if (childEnvelopes.get(c.getKey()).verify(Optional.of(PublicKey.ofHex(p.holder(), "holder")))
          instanceof Verification.Invalid inv) {
        return new Verdict.Invalid(c.getKey(), "child: " + inv.reason());
      }
      try {
        start = Grants.parse(c.getValue().grants());
      } catch (GrantsException e) {
        return new Verdict.Invalid(c.getKey(), "child.grants: " + e.getMessage());
      }
      issuer = p.issuer();
    }
    Map<String, Grants> byId = new HashMap<>();
    if (start != null) {
      byId.put(startId, start);
    }
    Grants inForce = start;
    Set<String> applied = new HashSet<>();
    List<String> order = new ArrayList<>();
    List<String> grantsOrder = new ArrayList<>(List.of(startId));
    for (Envelope a : amendments) {
      if (inForce == null) {
        return new Verdict.Invalid(
            a.address(),
            "amendment: run "
                + runId
                + " started under grants_id "
                + startId
                + ", and no jcp.child/1 of that grant (with its jcp.mint-policy/1) names an issuer");
      }
      Amendments.Verdict v =
          Amendments.decide(
              a, new Amendments.RunState(issuer, checkpoints, byId, inForce, applied));
      if (v instanceof Amendments.Refused r) {
        return new Verdict.Invalid(
            a.address(), "amendment: rule " + r.rule().rule() + ": " + r.rule().detail());
      }
      Amendments.Accepted ok = (Amendments.Accepted) v;
      applied.add(a.address());
      order.add(a.address());
      inForce = ok.newGrants();
      byId.put(inForce.grantsId(), inForce);
      grantsOrder.add(inForce.grantsId());
    }
    // Along the chain the grants change only at a resume, each time onto the next amendment's.
    int at = 0;
    for (int i = 1; i < segs.size(); i++) {
      RunSegment s = segs.get(i);
      if (s.grantsId().equals(grantsOrder.get(at))) {
        continue;
      }
      int next = grantsOrder.subList(at + 1, grantsOrder.size()).indexOf(s.grantsId());
      if (s.kind() != RunSegment.Kind.resume || next < 0) {
        return new Verdict.Invalid(
            "seq " + s.seq() + " of run " + runId,
            "grants_id changes from "
                + grantsOrder.get(at)
                + " to "
                + s.grantsId()
                + (s.kind() != RunSegment.Kind.resume
                    ? " in a " + s.kind() + " segment (only a resume takes an amendment)"
                    : " with no issuer-signed amendment to it in the input"));
      }
      at += 1 + next;
    }
    return new Verdict.Valid(runId, List.copyOf(order), grantsOrder.get(grantsOrder.size() - 1));
  }
}
