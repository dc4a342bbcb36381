package io.sandboxd.daemon.rpc;

import io.sandboxd.attest.Envelope;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.warmpool.PoolStats;
import io.sandboxd.warmpool.WarmPools;
import java.util.Map;

/**
 * The node's warm pools ({@code pools} null when it keeps none): what each holds and has served,
 * and the signed eviction records.
 */
record PoolCalls(WarmPools pools, RunStore store) {

  ListPoolsReply list(ListPoolsRequest req) {
    ListPoolsReply.Builder b = ListPoolsReply.newBuilder();
    if (pools != null) {
      for (PoolStats p : pools.stats()) {
        PoolInfo.Builder info =
            PoolInfo.newBuilder()
                .setModule(p.key().module())
                .setManifest(p.key().manifest().orElse(""))
                .setTier(p.key().tier())
                .setIdle(p.idle())
                .setClaims(p.claims())
                .setHits(p.hits())
                .setMisses(p.misses())
                .setIdleUj(p.idleUj())
                .setConfigured(p.configured())
                .setNotPoolable(p.notPoolable());
        p.evictions().entrySet().stream()
            .sorted(Map.Entry.comparingByKey())
            .forEach(
                e ->
                    info.addEvictions(
                        PoolEvictions.newBuilder()
                            .setReason(e.getKey().name())
                            .setCount(e.getValue())));
        b.addPools(info);
      }
      b.setIdleBytes(pools.idleBytes())
          .setMaxIdleBytes(pools.maxIdleBytes())
          .setIdlePower(pools.idlePowerLine());
    }
    int n = RequestFields.count("evictions", req.getEvictions(), 0, RequestFields.MAX_ROWS);
    if (n > 0) {
      for (Envelope e : store.evictions(n)) {
        b.addEvictions(e.toJsonLine());
      }
    }
    return b.build();
  }
}
