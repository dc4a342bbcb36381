package io.sandboxd.daemon.durable;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpAmendment;
import io.sandboxd.attest.JcpCheckpoint;
import io.sandboxd.attest.JcpChild;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.enforcer.AmendmentChain;
import io.sandboxd.enforcer.Grants;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The JCP records a run bundle carries (issue 23 item 4), checked at import as `sandboxctl verify`
 * checks them ({@link AmendmentChain}): the mint policy and child the run started under, its
 * checkpoints, and its amendments in the order applied, each issuer-signed, only tightening,
 * applied once and at a checkpoint of this run; every change of grants along the chain is an
 * amendment's, and the grants the bundle puts in force are the last amendment's (the chain's own
 * when there is none). Each refusal names the field: {@code jcp}.
 */
public final class BundleJcp {
  private BundleJcp() {}

  /** Most JCP records one bundle may carry. */
  static final int MAX_RECORDS = 2 + 2 * io.sandboxd.daemon.jcp.LiveAmendments.MAX_CHECKPOINTS;

  /** A bundle's JCP records, checked and sorted by what the importing node stores them as. */
  public record Checked(
      List<Envelope> evidence, List<Envelope> checkpoints, List<Envelope> amendments) {
    public Checked {
      evidence = List.copyOf(evidence);
      checkpoints = List.copyOf(checkpoints);
      amendments = List.copyOf(amendments);
    }

    public boolean isEmpty() {
      return evidence.isEmpty() && checkpoints.isEmpty() && amendments.isEmpty();
    }
  }

  /** The minted grant a run started under, as its carried policy and child record it. */
  public record Minted(String grantsJson, String policy, String child, String issuer) {}

  /**
   * Checks {@code jcp} against the run's verified {@code segments} (seq order) and the grants the
   * bundle says are in force; returns them sorted, or throws {@link DurableRunException.BadBundle}
   * naming {@code jcp} and the record at fault.
   */
  static Checked check(String runId, List<Envelope> segments, List<Envelope> jcp, Grants inForce) {
    if (jcp.size() > MAX_RECORDS) {
      // Each record costs a signature check: a bundle cannot make the node check millions.
      throw bad(
          jcp.size()
              + " records; a run holds at most a policy, a child and "
              + io.sandboxd.daemon.jcp.LiveAmendments.MAX_CHECKPOINTS
              + " checkpoints and amendments each ("
              + MAX_RECORDS
              + ")");
    }
    String start = RunSegment.fromCore(segments.get(0).core()).grantsId();
    List<Envelope> evidence = new ArrayList<>();
    List<Envelope> checkpoints = new ArrayList<>();
    List<Envelope> amendments = new ArrayList<>();
    Set<String> policiesNamed = new HashSet<>();
    Set<String> addresses = new HashSet<>();
    for (int i = 0; i < jcp.size(); i++) {
      Envelope e = jcp.get(i);
      String at = "jcp[" + i + "] " + e.address();
      String schema = e.schema().orElse("");
      // An amendment given twice is AmendmentChain's to name (rule replay).
      if (!addresses.add(e.address()) && !schema.equals(JcpAmendment.SCHEMA)) {
        throw bad(at + ": carried twice");
      }
      try {
        switch (schema) {
          case JcpMintPolicy.SCHEMA -> evidence.add(e);
          case JcpChild.SCHEMA -> {
            JcpChild c = JcpChild.fromCore(e.core());
            if (!c.grantsId().equals(start)) {
              throw bad(
                  at
                      + ": a child of grants_id "
                      + c.grantsId()
                      + ", the run started under "
                      + start);
            }
            policiesNamed.add(c.policy());
            evidence.add(e);
          }
          case JcpCheckpoint.SCHEMA -> {
            String of = JcpCheckpoint.fromCore(e.core()).runId();
            if (!of.equals(runId)) {
              throw bad(at + ": a checkpoint of run " + of + ", the bundle's run is " + runId);
            }
            checkpoints.add(e);
          }
          case JcpAmendment.SCHEMA -> {
            JcpAmendment.fromCore(e.core());
            amendments.add(e);
          }
          default -> throw bad(at + ": schema " + schema + " is not a JCP record (jcp.*/1)");
        }
      } catch (AttestException | IllegalArgumentException ex) {
        throw bad(at + ": " + ex.getMessage());
      }
    }
    for (Envelope e : evidence) {
      if (e.schema().orElse("").equals(JcpMintPolicy.SCHEMA)
          && !policiesNamed.contains(e.address())) {
        throw bad(e.address() + ": a mint policy no carried child was minted under");
      }
    }
    AmendmentChain.Verdict v = AmendmentChain.verify(segments, jcp);
    if (v instanceof AmendmentChain.Verdict.Invalid inv) {
      throw bad(inv.where() + ": " + inv.reason());
    }
    String expected = ((AmendmentChain.Verdict.Valid) v).grantsInForce();
    if (!inForce.grantsId().equals(expected)) {
      throw bad(
          "the bundle's grants hash to "
              + inForce.grantsId()
              + ", but its chain"
              + (amendments.isEmpty()
                  ? " is for " + expected + " and no amendment is carried"
                  : " and amendments put " + expected + " in force"));
    }
    return new Checked(evidence, checkpoints, amendments);
  }

  /**
   * The child among {@code carried} minted with {@code startGrantsId}, with its policy; empty when
   * none is carried.
   */
  public static Optional<Minted> minted(List<Envelope> carried, String startGrantsId) {
    for (Envelope c : carried) {
      if (!c.schema().orElse("").equals(JcpChild.SCHEMA)) {
        continue;
      }
      JcpChild child = JcpChild.fromCore(c.core());
      if (!child.grantsId().equals(startGrantsId)) {
        continue;
      }
      for (Envelope p : carried) {
        if (p.address().equals(child.policy())) {
          return Optional.of(
              new Minted(
                  CanonicalJson.canonicalString(child.grants()),
                  p.address(),
                  c.address(),
                  JcpMintPolicy.verified(p).issuer()));
        }
      }
    }
    return Optional.empty();
  }

  private static DurableRunException.BadBundle bad(String why) {
    return new DurableRunException.BadBundle("jcp: " + why);
  }
}
