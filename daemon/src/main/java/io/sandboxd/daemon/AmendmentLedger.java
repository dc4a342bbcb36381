package io.sandboxd.daemon;

import io.sandboxd.attest.Attestation;

/** What durable runs ask of the JCP side about one run: its amendments and its minted grant. */
interface AmendmentLedger {
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
      };

  /** Whether an amendment applied to the run put {@code grantsId} in force. */
  boolean amendedTo(String runId, String grantsId);

  /**
   * The attestation's {@code jcp} field: the minted grant the run started under and the amendments
   * applied to it, in order; null when there are neither.
   */
  Attestation.Jcp jcpOf(String runId);
}
