package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ListPoolsReply;
import io.sandboxd.daemon.rpc.ListPoolsRequest;
import io.sandboxd.daemon.rpc.PoolEvictions;
import io.sandboxd.daemon.rpc.PoolInfo;
import java.util.Optional;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `sandboxctl pools`: the node's warm pools (key, idle count, claims, hits, misses, evictions by
 * reason, accrued idle energy), or with {@code --evictions N} the newest signed eviction records.
 */
@Command(
    name = "pools",
    description =
        "List the daemon's warm pools; --evictions N prints the newest signed eviction records as"
            + " JSON lines (pipe to `sandboxctl verify -`).")
final class PoolsCommand extends DaemonCommand {
  @Option(names = "--json", description = "Print a JSON array of pools.")
  boolean json;

  @Option(
      names = "--evictions",
      paramLabel = "N",
      description = "Print the newest N eviction envelopes instead of the pools.")
  int evictions;

  @Override
  Optional<String> unusable() {
    return unusableIfNegative("--evictions: must not be negative", evictions);
  }

  @Override
  int ask(DaemonClient c) {
    ListPoolsReply reply =
        c.stub().listPools(ListPoolsRequest.newBuilder().setEvictions(evictions).build());
    if (evictions > 0) {
      reply.getEvictionsList().forEach(System.out::println);
      return 0;
    }
    if (json) {
      ArrayNode a = CanonicalJson.mapper().createArrayNode();
      for (PoolInfo p : reply.getPoolsList()) {
        ObjectNode o = a.addObject();
        o.put("module", p.getModule());
        if (p.getManifest().isEmpty()) {
          o.putNull("manifest");
        } else {
          o.put("manifest", p.getManifest());
        }
        o.put("tier", p.getTier());
        o.put("idle", p.getIdle());
        o.put("claims", p.getClaims());
        o.put("hits", p.getHits());
        o.put("misses", p.getMisses());
        ObjectNode ev = o.putObject("evictions");
        for (PoolEvictions e : p.getEvictionsList()) {
          ev.put(e.getReason(), e.getCount());
        }
        o.put("idle_uj", p.getIdleUj());
        o.put("configured", p.getConfigured());
        if (!p.getNotPoolable().isEmpty()) {
          o.put("not_poolable", p.getNotPoolable());
        }
      }
      System.out.println(a);
      return 0;
    }
    System.out.printf(
        "%-16s  %-8s  %-4s  %5s  %7s  %7s  %7s  %-28s  %s%n",
        "MODULE", "MANIFEST", "TIER", "IDLE", "CLAIMS", "HITS", "MISSES", "EVICTIONS", "IDLE_UJ");
    for (PoolInfo p : reply.getPoolsList()) {
      String ev =
          p.getEvictionsList().stream()
              .map(e -> e.getReason() + "=" + e.getCount())
              .collect(Collectors.joining(","));
      System.out.printf(
          "%-16s  %-8s  %-4s  %5d  %7d  %7d  %7d  %-28s  %d%n",
          p.getModule().substring(0, Math.min(16, p.getModule().length())),
          p.getManifest().isEmpty() ? "none" : p.getManifest().substring(0, 8),
          p.getTier(),
          p.getIdle(),
          p.getClaims(),
          p.getHits(),
          p.getMisses(),
          ev.isEmpty() ? "-" : ev,
          p.getIdleUj());
      if (!p.getNotPoolable().isEmpty()) {
        System.out.println("  not poolable: " + p.getNotPoolable());
      }
    }
    System.out.println(
        "idle heap "
            + reply.getIdleBytes()
            + " of "
            + reply.getMaxIdleBytes()
            + " bytes; node idle draw "
            + reply.getIdlePower());
    return 0;
  }
}
