package io.sandboxd.daemon.report;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.EvidenceBundle;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

/**
 * A run whose records verified together ({@link EvidenceBundle}): its chain in seq order, its
 * receipts and attestations parsed from the signed cores, and what the daemon said beside them
 * (state, submitter) kept apart as unsigned.
 *
 * @param claimProvenance how the warm-pool idle energy in its receipts was obtained (its signed
 *     claim), empty when it started cold
 * @param grantsText the grant set's text when it was given and its canonical form hashes to the
 *     signed grants_id; empty otherwise
 */
public record VerifiedRun(
    String runId,
    String state,
    OptionalLong submitterUid,
    List<Envelope> envelopes,
    List<Envelope> segmentEnvelopes,
    List<RunSegment> segments,
    List<Envelope> receiptEnvelopes,
    List<Receipt> receipts,
    List<Envelope> attestationEnvelopes,
    List<Attestation> attestations,
    Optional<Provenance> claimProvenance,
    EvidenceBundle.RunTotal total,
    Set<String> signers,
    Optional<String> grantsText) {
  public VerifiedRun {
    envelopes = List.copyOf(envelopes);
    segmentEnvelopes = List.copyOf(segmentEnvelopes);
    segments = List.copyOf(segments);
    receiptEnvelopes = List.copyOf(receiptEnvelopes);
    receipts = List.copyOf(receipts);
    attestationEnvelopes = List.copyOf(attestationEnvelopes);
    attestations = List.copyOf(attestations);
    signers = Set.copyOf(signers);
  }

  /** The module's address, as its receipts (or else its attestation) sign it. */
  public String unit() {
    if (!receipts.isEmpty()) {
      return receipts.get(0).unit();
    }
    return attestations.isEmpty() ? "" : attestations.get(0).unit();
  }

  /** The grants in force at the end of the chain (a resume may have re-offered them). */
  public String grantsId() {
    if (!segments.isEmpty()) {
      return segments.get(segments.size() - 1).grantsId();
    }
    if (!receipts.isEmpty()) {
      return receipts.get(0).grantsId();
    }
    return attestations.isEmpty() ? "" : attestations.get(0).grantsId();
  }

  /** When the run started: the earliest signed time among its records, in ms since the epoch. */
  public long startedMs() {
    long t = Long.MAX_VALUE;
    for (RunSegment s : segments) {
      t = Math.min(t, s.atMs());
    }
    for (Receipt r : receipts) {
      t = Math.min(t, r.startedMs());
    }
    for (Attestation a : attestations) {
      t = Math.min(t, a.issuedMs());
    }
    return t == Long.MAX_VALUE ? 0 : t;
  }

  /** How it ended, as its newest attestation signs it; empty while it has not ended. */
  public Optional<Outcome> outcome() {
    return attestations.isEmpty()
        ? Optional.empty()
        : Optional.of(attestations.get(attestations.size() - 1).outcome());
  }

  /** The outcome's kind (Completed, Failed, Terminated, Declined), or the state of an open run. */
  public String outcomeKind() {
    Optional<Outcome> o = outcome();
    if (o.isEmpty()) {
      return state.isEmpty() ? "open" : state;
    }
    if (o.get() instanceof Outcome.Terminated) {
      return "Terminated";
    }
    if (o.get() instanceof Outcome.Declined) {
      return "Declined";
    }
    return o.get() instanceof Outcome.Failed ? "Failed" : "Completed";
  }

  /** CPU time over all its execute segments, ms. */
  public long cpuTimeMs() {
    long t = 0;
    for (Receipt r : receipts) {
      t = Math.addExact(t, r.cpuTimeMs());
    }
    return t;
  }

  /** The hosts its chain ran on, in the order it reached them. */
  public List<String> hosts() {
    return segments.stream().map(RunSegment::hostId).distinct().toList();
  }
}
