package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Set;

/**
 * A run's claim of a warm instance ({@code sandbox.warmpool-claim/1}, WIRE.md §2.9): which pool and
 * instance served it, when the instance was warmed and claimed, and the idle energy it accrued in
 * between, which the run's receipt carries as {@code idle_uj}.
 *
 * @param manifest the environment manifest address the pool holds, or null for none
 */
public record WarmpoolClaim(
    String pool,
    String instance,
    long warmedMs,
    long claimedMs,
    String tier,
    String manifest,
    long accruedIdleUj,
    Provenance provenance,
    String runId) {

  public static final String SCHEMA = "sandbox.warmpool-claim/1";

  private static final Set<String> FIELDS =
      Set.of(
          "schema",
          "pool",
          "instance",
          "warmed_ms",
          "claimed_ms",
          "tier",
          "manifest",
          "accrued_idle_uj",
          "provenance",
          "run_id");

  public WarmpoolClaim {
    WarmpoolEvict.requireTier(tier, "warmpool-claim.tier");
    if (claimedMs < warmedMs) {
      throw new AttestException("warmpool-claim.claimed_ms: before warmed_ms");
    }
    if (pool.isEmpty() || instance.isEmpty() || runId.isEmpty()) {
      throw new AttestException("warmpool-claim: pool, instance and run_id must not be empty");
    }
  }

  public ObjectNode toCore() {
    ObjectNode o = WarmpoolEvict.slotCore(SCHEMA, pool, instance, warmedMs);
    o.put("claimed_ms", claimedMs);
    o.put("tier", tier);
    o.put("manifest", manifest); // a null manifest is written as JSON null
    o.put("accrued_idle_uj", accruedIdleUj);
    o.put("provenance", provenance.name());
    o.put("run_id", runId);
    return o;
  }

  /** Parses a claim core strictly: every field present, no other, integers only. */
  public static WarmpoolClaim fromCore(JsonNode core) {
    JsonReader r =
        JsonReader.of(core, "warmpool-claim", JsonReader.RECORD).only(FIELDS).schema(SCHEMA);
    return new WarmpoolClaim(
        r.string("pool"),
        r.string("instance"),
        r.u64("warmed_ms"),
        r.u64("claimed_ms"),
        r.string("tier"),
        r.nullableHex32("manifest"),
        r.u64("accrued_idle_uj"),
        Provenance.parse(r.string("provenance"), r.pathOf("provenance")),
        r.string("run_id"));
  }
}
