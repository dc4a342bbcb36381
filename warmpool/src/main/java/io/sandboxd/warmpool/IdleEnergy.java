package io.sandboxd.warmpool;

import java.math.BigInteger;

/**
 * Idle energy of one instance, in integers: the node's idle draw apportioned by the instance's
 * share of the node's memory, over time. mW × ms is µJ, so µJ = mW × ms × bytes / node bytes; the
 * remainder is carried, so accruing in many steps loses nothing against accruing once.
 */
final class IdleEnergy {
  private final long nodeBytes;
  // µJ × nodeBytes accrued so far.
  private BigInteger scaled = BigInteger.ZERO;

  IdleEnergy(long nodeBytes) {
    if (nodeBytes <= 0) {
      throw new IllegalArgumentException("node memory: must be positive");
    }
    this.nodeBytes = nodeBytes;
  }

  /** Adds {@code ms} at a node draw of {@code milliwatts} for an instance of {@code bytes}. */
  void accrue(long milliwatts, long bytes, long ms) {
    if (milliwatts <= 0 || bytes <= 0 || ms <= 0) {
      return;
    }
    scaled =
        scaled.add(
            BigInteger.valueOf(milliwatts)
                .multiply(BigInteger.valueOf(ms))
                .multiply(BigInteger.valueOf(bytes)));
  }

  /** Whole µJ accrued so far. */
  long microjoules() {
    BigInteger uj = scaled.divide(BigInteger.valueOf(nodeBytes));
    return uj.bitLength() < 63 ? uj.longValue() : Long.MAX_VALUE;
  }

  /** µJ for one span, without carrying (for callers that accrue once). */
  static long of(long milliwatts, long bytes, long ms, long nodeBytes) {
    IdleEnergy e = new IdleEnergy(nodeBytes);
    e.accrue(milliwatts, bytes, ms);
    return e.microjoules();
  }
}
