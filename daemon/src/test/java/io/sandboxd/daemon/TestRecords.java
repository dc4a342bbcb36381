package io.sandboxd.daemon;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.HostIdentity;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;

/** Signed-record cores the daemon's store, report and CLI tests all need alike. */
public final class TestRecords {
  private TestRecords() {}

  /**
   * The attestation of an S2 run by host {@code hostId} (platform "test", key {@code key}) with no
   * manifest, clock, detection or TEE report.
   */
  public static Attestation attestation(
      SigningKey key,
      String hostId,
      String grantsId,
      String receipt,
      String unit,
      String journalRoot,
      Outcome outcome,
      long issuedMs) {
    return Attestation.builder()
        .host(new HostIdentity(hostId, key.publicKey().hex(), "test"))
        .tier("S2")
        .grantsId(grantsId)
        .receipt(receipt)
        .unit(unit)
        .journalRoot(journalRoot)
        .outcome(outcome)
        .clockConstantMs(0L)
        .issuedMs(issuedMs)
        .build();
  }

  /**
   * Execute segment {@code seq} of {@code runId} after {@code prev}, over {@code receipt}, by host
   * {@code hostId} with key {@code key}: S2, no snapshot, no idle energy.
   */
  public static RunSegment execute(
      String runId,
      long seq,
      String prev,
      String hostId,
      SigningKey key,
      String grantsId,
      String receipt,
      long atMs) {
    return new RunSegment(
        runId,
        seq,
        RunSegment.Kind.execute,
        prev,
        hostId,
        key.publicKey().hex(),
        "S2",
        grantsId,
        receipt,
        null,
        0,
        Provenance.Estimator,
        atMs);
  }
}
