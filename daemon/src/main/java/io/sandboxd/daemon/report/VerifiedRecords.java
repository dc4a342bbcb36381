package io.sandboxd.daemon.report;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.EvidenceBundle;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.WarmpoolClaim;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.GrantsException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The runs a report may draw: each run's records checked together by {@link EvidenceBundle} (the
 * verifier `sandboxctl verify` uses) against the trusted signers, and the runs that failed, with
 * where and why. Nothing about a failed run but its id and the reason is kept.
 */
public record VerifiedRecords(List<VerifiedRun> runs, List<RejectedRun> rejected) {
  public VerifiedRecords {
    runs = List.copyOf(runs);
    rejected = List.copyOf(rejected);
  }

  /**
   * Checks every run in {@code evidence}; keeps those that verify and fall in {@code window} (by
   * their signed start time and the daemon's submitter), in start order, and lists every run that
   * does not verify.
   */
  public static VerifiedRecords check(
      List<RunEvidence> evidence, Set<PublicKey> trusted, ReportWindow window) {
    List<VerifiedRun> ok = new ArrayList<>();
    List<RejectedRun> bad = new ArrayList<>();
    for (RunEvidence e : evidence) {
      // A run with a known problem is reported whatever the window: nothing about it (not even
      // its time or submitter) can be believed.
      if (!window.admits(e.submitterUid()) && e.problem().isEmpty()) {
        continue;
      }
      Verdict v = check(e, trusted);
      if (v.rejected() != null) {
        bad.add(v.rejected());
      } else if (window.covers(v.run().startedMs())) {
        ok.add(v.run());
      }
    }
    ok.sort(Comparator.comparingLong(VerifiedRun::startedMs).thenComparing(VerifiedRun::runId));
    return new VerifiedRecords(ok, bad);
  }

  /** One run: verified, or rejected. */
  private record Verdict(VerifiedRun run, RejectedRun rejected) {
    static Verdict no(String runId, String where, String why) {
      return new Verdict(null, new RejectedRun(runId, where, why));
    }
  }

  private static Verdict check(RunEvidence e, Set<PublicKey> trusted) {
    String id = e.runId();
    if (e.problem().isPresent()) {
      return Verdict.no(id, "daemon", e.problem().get());
    }
    if (e.envelopes().isEmpty()) {
      return Verdict.no(id, "records", "no signed records");
    }
    EvidenceBundle.Verdict verdict = EvidenceBundle.verify(e.envelopes(), trusted);
    if (verdict instanceof EvidenceBundle.Verdict.Invalid inv) {
      return Verdict.no(id, inv.where(), inv.reason());
    }
    EvidenceBundle.Verdict.Valid valid = (EvidenceBundle.Verdict.Valid) verdict;
    List<Envelope> segEnv = new ArrayList<>();
    List<RunSegment> segs = new ArrayList<>();
    List<Envelope> recEnv = new ArrayList<>();
    List<Receipt> recs = new ArrayList<>();
    List<Envelope> attEnv = new ArrayList<>();
    List<Attestation> atts = new ArrayList<>();
    Optional<Provenance> claim = Optional.empty();
    try {
      for (Envelope env : e.envelopes()) {
        switch (env.schema().orElse("")) {
          case RunSegment.SCHEMA -> {
            segEnv.add(env);
            segs.add(RunSegment.fromCore(env.core()));
          }
          case Receipt.SCHEMA -> {
            recEnv.add(env);
            recs.add(Receipt.fromCore(env.core()));
          }
          case Attestation.SCHEMA -> {
            attEnv.add(env);
            atts.add(Attestation.fromCore(env.core()));
          }
          case WarmpoolClaim.SCHEMA ->
              claim = Optional.of(WarmpoolClaim.fromCore(env.core()).provenance());
          default -> {
            // Other signed records verified with the rest; the report draws nothing from them.
          }
        }
      }
    } catch (AttestException ex) {
      return Verdict.no(id, "records", ex.getMessage());
    }
    // The daemon answered these records for this run id: each must be signed for it.
    for (RunSegment s : segs) {
      if (!s.runId().equals(id)) {
        return Verdict.no(id, "seq " + s.seq(), "segment of another run: " + s.runId());
      }
    }
    for (Receipt r : recs) {
      if (!r.runId().equals(id)) {
        return Verdict.no(id, "receipt", "receipt of another run: " + r.runId());
      }
    }
    if (segs.isEmpty() && atts.isEmpty()) {
      return Verdict.no(id, "records", "neither a segment nor an attestation");
    }
    Optional<EvidenceBundle.RunTotal> total =
        valid.totals().stream().filter(t -> t.runId().equals(id)).findFirst();
    EvidenceBundle.RunTotal runTotal =
        total.orElse(new EvidenceBundle.RunTotal(id, sum(recs), 0, true));
    if (!runTotal.receiptsGiven()) {
      return Verdict.no(id, "run " + id, "a receipt its chain names is missing");
    }
    // Sort the chain by seq (the verifier checked it is dense and linked) and pair the envelopes.
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < segs.size(); i++) {
      order.add(i);
    }
    order.sort(Comparator.comparingLong(i -> segs.get(i).seq()));
    List<RunSegment> sortedSegs = order.stream().map(segs::get).toList();
    List<Envelope> sortedEnv = order.stream().map(segEnv::get).toList();
    String grantsId = sortedSegs.isEmpty() ? atts.get(0).grantsId() : sortedSegs.get(0).grantsId();
    return new Verdict(
        new VerifiedRun(
            id,
            e.state(),
            e.submitterUid(),
            e.envelopes(),
            sortedEnv,
            sortedSegs,
            recEnv,
            recs,
            attEnv,
            atts,
            claim,
            runTotal,
            valid.signers(),
            grantsText(e.grantsJson(), grantsId)),
        null);
  }

  private static long sum(List<Receipt> receipts) {
    long t = 0;
    for (Receipt r : receipts) {
      t = Math.addExact(t, r.totalUj());
    }
    return t;
  }

  /** The grant text when its content id is the signed one; unsigned text is never shown else. */
  static Optional<String> grantsText(String json, String grantsId) {
    if (json.isEmpty()) {
      return Optional.empty();
    }
    try {
      Grants g = Grants.parse(json.getBytes(StandardCharsets.UTF_8));
      return g.grantsId().equals(grantsId)
          ? Optional.of(new String(g.canonicalBytes(), StandardCharsets.UTF_8))
          : Optional.empty();
    } catch (GrantsException | AttestException ex) {
      return Optional.empty();
    }
  }
}
