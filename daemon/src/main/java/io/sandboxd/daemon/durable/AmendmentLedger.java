package io.sandboxd.daemon.durable;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Envelope;
import java.util.List;

/** What durable runs ask of the JCP side about one run: its amendments and its minted grant. */
public interface AmendmentLedger {
  /** A node without standing grants: no run is amended or minted. */
  AmendmentLedger NONE =
      new AmendmentLedger() {
        @Override
        public boolean amendedTo(String runId, String grantsId) {
          return false;
        }

        @Override
        public Attestation.Jcp jcpOf(String runId) {
          return null;
        }

        @Override
        public void checkResume(String runId) {}

        @Override
        public List<Envelope> records(String runId) {
          return List.of();
        }

        @Override
        public void carry(String runId, BundleJcp.Checked jcp) {
          if (!jcp.isEmpty()) {
            throw new DurableRunException.BadBundle(
                "jcp: this node keeps no JCP records, and the run's grants changed by amendment");
          }
        }
      };

  /** Whether an amendment applied to the run put {@code grantsId} in force. */
  boolean amendedTo(String runId, String grantsId);

  /**
   * The attestation's {@code jcp} field: the minted grant the run started under and the amendments
   * applied to it, in order; null when there are neither.
   */
  Attestation.Jcp jcpOf(String runId);

  /**
   * Refuses (naming the rule) to resume a run whose minted child no longer holds: released, its
   * parent released, or expired. A resume continues a run already counted, so it is no new use.
   */
  void checkResume(String runId);

  /**
   * The run's JCP records as a verifier needs them beside its segments (WIRE.md §2.14): the policy
   * and child of the minted grant it started under, its checkpoints, its amendments in the order
   * applied; empty when there are none.
   */
  List<Envelope> records(String runId);

  /** Stores the JCP records an imported bundle carried for {@code runId}, checked already. */
  void carry(String runId, BundleJcp.Checked jcp);
}
