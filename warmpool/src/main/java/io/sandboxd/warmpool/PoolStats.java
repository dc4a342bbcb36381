package io.sandboxd.warmpool;

import io.sandboxd.attest.WarmpoolEvict;
import java.util.Map;

/**
 * One pool's counters: idle instances now, claims (hits + misses), evictions by reason and the idle
 * energy accrued by every instance it has held (claimed, evicted or still idle), and why it makes
 * no instances ({@code notPoolable}, empty while it does).
 */
public record PoolStats(
    PoolKey key,
    int idle,
    long claims,
    long hits,
    long misses,
    Map<WarmpoolEvict.Reason, Long> evictions,
    long idleUj,
    boolean configured,
    String notPoolable) {
  public PoolStats {
    evictions = Map.copyOf(evictions);
  }
}
