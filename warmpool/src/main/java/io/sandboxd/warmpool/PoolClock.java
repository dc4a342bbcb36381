package io.sandboxd.warmpool;

import java.util.function.LongSupplier;

/**
 * The pools' two clocks: one that never steps for what is measured (ttl, idle energy, demand
 * windows, backoff), and the wall clock that stamps claim and eviction records. On the wall clock
 * alone, an NTP step or a resumed VM put an hour of idle energy into a signed claim, or kept an
 * instance past its ttl for as long as the clock went back.
 */
public record PoolClock(LongSupplier elapsedMs, LongSupplier wallMs) {
  /** The node's clocks: nanoTime for what is measured, currentTimeMillis for stamps. */
  public static final PoolClock SYSTEM =
      new PoolClock(() -> System.nanoTime() / 1_000_000, System::currentTimeMillis);

  /** One clock for both (tests that move time by hand). */
  public static PoolClock of(LongSupplier ms) {
    return new PoolClock(ms, ms);
  }
}
