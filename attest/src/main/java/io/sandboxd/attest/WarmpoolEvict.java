package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Set;

/**
 * An unclaimed warm instance thrown away ({@code sandbox.warmpool-evict/1}, WIRE.md §2.9), with the
 * energy keeping it cost and no run paid for: warm-up, idle time and teardown.
 */
public record WarmpoolEvict(
    String pool,
    String instance,
    long warmedMs,
    long evictedMs,
    Reason reason,
    long overheadUj,
    Provenance provenance) {

  public static final String SCHEMA = "sandbox.warmpool-evict/1";

  /** Why an instance left its pool unclaimed. */
  public enum Reason {
    Ttl,
    Capacity,
    Drift,
    Shutdown;

    static Reason parse(String s, String path) {
      return JsonReader.constant(Reason.class, s, path, "eviction reason");
    }
  }

  private static final Set<String> FIELDS =
      Set.of(
          "schema",
          "pool",
          "instance",
          "warmed_ms",
          "evicted_ms",
          "reason",
          "overhead_uj",
          "provenance");

  public WarmpoolEvict {
    if (evictedMs < warmedMs) {
      throw new AttestException("warmpool-evict.evicted_ms: before warmed_ms");
    }
    if (pool.isEmpty() || instance.isEmpty()) {
      throw new AttestException("warmpool-evict: pool and instance must not be empty");
    }
  }

  /** Tiers are S0..S6 (WIRE.md §2.12). */
  static void requireTier(String tier, String path) {
    if (tier.length() != 2
        || tier.charAt(0) != 'S'
        || tier.charAt(1) < '0'
        || tier.charAt(1) > '6') {
      throw new AttestException(path + ": expected a tier S0..S6, got \"" + tier + "\"");
    }
  }

  /** The fields both warm-pool records start with: their schema and the instance they speak of. */
  static ObjectNode slotCore(String schema, String pool, String instance, long warmedMs) {
    return CanonicalJson.core(schema)
        .put("pool", pool)
        .put("instance", instance)
        .put("warmed_ms", warmedMs);
  }

  public ObjectNode toCore() {
    ObjectNode o = slotCore(SCHEMA, pool, instance, warmedMs);
    o.put("evicted_ms", evictedMs);
    o.put("reason", reason.name());
    o.put("overhead_uj", overheadUj);
    o.put("provenance", provenance.name());
    return o;
  }

  /** Parses an eviction core strictly: every field present, no other, integers only. */
  public static WarmpoolEvict fromCore(JsonNode core) {
    JsonReader r =
        JsonReader.of(core, "warmpool-evict", JsonReader.RECORD).only(FIELDS).schema(SCHEMA);
    return new WarmpoolEvict(
        r.string("pool"),
        r.string("instance"),
        r.u64("warmed_ms"),
        r.u64("evicted_ms"),
        Reason.parse(r.string("reason"), r.pathOf("reason")),
        r.u64("overhead_uj"),
        Provenance.parse(r.string("provenance"), r.pathOf("provenance")));
  }
}
