package io.sandboxd.executor;

/**
 * What a run consumed in its earlier segments (CPU ms and µJ, as its signed receipts state them): a
 * resumed segment may use only what its grant has left, so budgets hold per run, not per segment.
 */
public record Consumed(long cpuTimeMs, long energyUj) {
  /** A run's first segment. */
  public static final Consumed NONE = new Consumed(0, 0);

  public Consumed {
    if (cpuTimeMs < 0 || energyUj < 0) {
      throw new IllegalArgumentException("consumed: negative " + cpuTimeMs + " ms, " + energyUj);
    }
  }

  /** This and {@code more}, saturating (receipts are bounded; a sum past 2^63 is no budget). */
  public Consumed plus(long moreCpuMs, long moreUj) {
    return new Consumed(saturatingAdd(cpuTimeMs, moreCpuMs), saturatingAdd(energyUj, moreUj));
  }

  private static long saturatingAdd(long a, long b) {
    long s = a + b;
    return ((a ^ s) & (b ^ s)) < 0 ? Long.MAX_VALUE : s;
  }
}
