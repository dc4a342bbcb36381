package io.sandboxd.warmpool;

import java.util.List;

/**
 * How many warm instances the node keeps: pools named by the operator, pools made for modules that
 * see demand, and a ceiling on the heap all idle instances hold together.
 *
 * @param configured the operator's pools, by module address
 * @param adaptive when a module gets a pool of its own from demand
 * @param maxIdleBytes the node-wide ceiling on heap bytes held by idle instances
 * @param nodeBytes the memory the node's idle draw is apportioned over
 * @param tickMs how often the refill thread accrues idle energy, evicts and refills
 */
public record PoolPolicy(
    List<Configured> configured,
    Adaptive adaptive,
    long maxIdleBytes,
    long nodeBytes,
    long tickMs) {

  public PoolPolicy {
    configured = List.copyOf(configured);
  }

  /** An operator's pool: keep between {@code minIdle} and {@code maxIdle} idle, each for ttlMs. */
  public record Configured(String module, int minIdle, int maxIdle, long ttlMs) {
    public Configured {
      if (minIdle < 0 || maxIdle < minIdle) {
        throw new IllegalArgumentException("pool sizes: need 0 <= min_idle <= max_idle");
      }
    }
  }

  /**
   * A module submitted more than {@code submits} times within {@code windowMs} gets a pool of
   * {@code minIdle}..{@code maxIdle}; once it has seen no claim for a window it shrinks to none.
   * {@code submits == 0} turns adaptive pools off. A module whose instances take less than {@code
   * minWarmupUs} of CPU to make stops getting them after its first few: a warm claim signs and
   * stores a record, which costs more than such an instantiation saves (0: no floor).
   */
  public record Adaptive(
      int submits, long windowMs, int minIdle, int maxIdle, long ttlMs, long minWarmupUs) {
    public static final Adaptive OFF = new Adaptive(0, 60_000, 0, 0, 60_000, 0);

    /** Without a warm-up floor: every module with the demand gets its pool. */
    public Adaptive(int submits, long windowMs, int minIdle, int maxIdle, long ttlMs) {
      this(submits, windowMs, minIdle, maxIdle, ttlMs, 0);
    }
  }

  /** No pools at all. */
  public static PoolPolicy none() {
    return new PoolPolicy(List.of(), Adaptive.OFF, 0, 1L << 30, 100);
  }
}
