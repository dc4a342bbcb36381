package io.sandboxd.warmpool;

import io.sandboxd.attest.Provenance;

/**
 * The node's idle power draw and how it is known: measured where the node has a meter, the
 * estimator's figure otherwise. Idle instances share it by memory footprint.
 */
public interface IdlePower {
  /** The node's idle draw now, in milliwatts. */
  long milliwatts();

  Provenance provenance();

  /** A fixed draw with a fixed provenance (the estimator's, or a test's). */
  static IdlePower fixed(long milliwatts, Provenance provenance) {
    if (milliwatts < 0) {
      throw new IllegalArgumentException("idle power: negative");
    }
    return new IdlePower() {
      @Override
      public long milliwatts() {
        return milliwatts;
      }

      @Override
      public Provenance provenance() {
        return provenance;
      }
    };
  }
}
