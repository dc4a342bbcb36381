package io.sandboxd.warmpool;

import io.sandboxd.attest.WarmpoolClaim;
import io.sandboxd.executor.PreparedInstance;
import java.util.Optional;

/**
 * What a run got from the pools: a warm instance with its claim record (idle energy accrued), or
 * nothing, and the run instantiates cold.
 */
public record Claim(Optional<PreparedInstance> instance, Optional<WarmpoolClaim> record) {
  static final Claim COLD = new Claim(Optional.empty(), Optional.empty());

  /** No warm instance: the run instantiates its own. */
  public static Claim cold() {
    return COLD;
  }

  /** Whether a warm instance serves the run. */
  public boolean warm() {
    return instance.isPresent();
  }

  /** The idle energy the run's receipt carries as {@code idle_uj} (0 for a cold start). */
  public long idleUj() {
    return record.map(WarmpoolClaim::accruedIdleUj).orElse(0L);
  }
}
