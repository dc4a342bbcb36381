package io.sandboxd.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.JsonReader;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Warm pools (top-level {@code pools} and {@code pool_limits}): the operator's per-module pools,
 * adaptive pools for modules that see demand, and the node-wide ceiling on heap bytes held by idle
 * instances.
 *
 * @param configured {@code pools}: one entry per module address
 * @param adaptive {@code pool_limits.adaptive}
 * @param maxIdleBytes {@code pool_limits.max_idle_bytes}: all idle instances together
 * @param idleEstimateMw {@code pool_limits.idle_estimate_mw}: the node's idle draw where no meter
 *     measures it
 * @param tickMs {@code pool_limits.refill_interval_ms}: how often the refill thread runs
 */
public record Pools(
    List<Module> configured,
    Adaptive adaptive,
    long maxIdleBytes,
    long idleEstimateMw,
    long tickMs) {

  public Pools {
    configured = List.copyOf(configured);
  }

  /** Most configured pools. */
  static final int MAX_POOLS = 1024;

  /** One configured pool: a module address (64 hex, optionally {@code b3:}) and its sizes. */
  public record Module(String module, int minIdle, int maxIdle, long ttlMs) {}

  /**
   * A module submitted more than {@code submits} times within {@code windowMs} gets a pool of
   * {@code minIdle}..{@code maxIdle} instances living {@code ttlMs}; 0 submits turns this off. One
   * whose instances take under {@code minWarmupUs} of CPU to make gets no more after its first few
   * (0: no floor).
   */
  public record Adaptive(
      int submits, long windowMs, int minIdle, int maxIdle, long ttlMs, long minWarmupUs) {}

  /**
   * The default warm-up floor of adaptive pools (µs of CPU): a warm claim signs and stores a record
   * (about 50 µs here), so a module that instantiates in less than twice that runs faster cold.
   */
  static final long MIN_WARMUP_US = 100;

  public static Pools defaults() {
    return new Pools(
        List.of(), new Adaptive(8, 60_000, 1, 8, 300_000, MIN_WARMUP_US), 256L << 20, 5_000, 100);
  }

  static Pools parse(JsonNode poolsNode, JsonReader limitsReader) {
    Pools d = defaults();
    List<Module> modules = new ArrayList<>();
    if (poolsNode != null && !poolsNode.isNull()) {
      if (!poolsNode.isArray()) {
        throw new ConfigException("$.pools: expected an array of pools");
      }
      if (poolsNode.size() > MAX_POOLS) {
        throw new ConfigException("$.pools: more than " + MAX_POOLS + " pools");
      }
      Set<String> seen = new HashSet<>();
      for (int i = 0; i < poolsNode.size(); i++) {
        String at = "$.pools[" + i + "]";
        JsonReader p =
            JsonReader.of(
                poolsNode.get(i),
                at,
                Set.of("module", "min_idle", "max_idle", "ttl_ms"),
                ConfigException.FAULT);
        String module = p.string("module", null);
        if (module == null) {
          throw new ConfigException(at + ".module: missing");
        }
        String hex = module.startsWith("b3:") ? module.substring(3) : module;
        if (!hex.matches("[0-9a-f]{64}")) {
          throw new ConfigException(at + ".module: expected a module address (64 lowercase hex)");
        }
        if (!seen.add(hex)) {
          throw new ConfigException(at + ".module: a second pool for " + hex);
        }
        int min = (int) p.integer("min_idle", 1, 0, 4096);
        int max = (int) p.integer("max_idle", Math.max(min, 8), 0, 4096);
        if (max < min) {
          throw new ConfigException(at + ".max_idle: less than min_idle " + min);
        }
        modules.add(new Module(hex, min, max, p.integer("ttl_ms", 300_000, 1, 7L * 24 * 3600_000)));
      }
    }
    JsonReader a =
        limitsReader.objectOrEmpty(
            "adaptive",
            Set.of("submits", "window_ms", "min_idle", "max_idle", "ttl_ms", "min_warmup_us"));
    Adaptive da = d.adaptive();
    int amin = (int) a.integer("min_idle", da.minIdle(), 0, 4096);
    int amax = (int) a.integer("max_idle", Math.max(amin, da.maxIdle()), 0, 4096);
    if (amax < amin) {
      throw new ConfigException("$.pool_limits.adaptive.max_idle: less than min_idle " + amin);
    }
    return new Pools(
        modules,
        new Adaptive(
            (int) a.integer("submits", da.submits(), 0, 1_000_000),
            a.integer("window_ms", da.windowMs(), 1, 24L * 3600_000),
            amin,
            amax,
            a.integer("ttl_ms", da.ttlMs(), 1, 7L * 24 * 3600_000),
            a.integer("min_warmup_us", da.minWarmupUs(), 0, 60_000_000)),
        limitsReader.integer("max_idle_bytes", d.maxIdleBytes(), 0, 1L << 44),
        limitsReader.integer("idle_estimate_mw", d.idleEstimateMw(), 0, 10_000_000_000L),
        limitsReader.integer("refill_interval_ms", d.tickMs(), 1, 60_000));
  }
}
