package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Set;

/**
 * The node's sealed verification checkpoint of its run store ({@code sandbox.store-checkpoint/1}):
 * every stored run before ledger position {@code runs} was checked (signatures, links, journal
 * roots, row columns) and the hash chain over them is {@code chain}. A start-up verifies only the
 * runs after it; a distinct schema, so a copied {@link StoreHead} can never pass for one.
 */
public record StoreCheckpoint(long runs, String chain, long verifiedMs) {
  public static final String SCHEMA = "sandbox.store-checkpoint/1";

  private static final Set<String> FIELDS = Set.of("schema", "runs", "chain", "verified_ms");

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.core(SCHEMA);
    o.put("runs", runs);
    o.put("chain", chain);
    o.put("verified_ms", verifiedMs);
    return o;
  }

  public static StoreCheckpoint fromCore(JsonNode core) {
    JsonReader r =
        JsonReader.of(core, "store-checkpoint", JsonReader.RECORD).only(FIELDS).schema(SCHEMA);
    return new StoreCheckpoint(r.u64("runs"), r.hex32("chain"), r.u64("verified_ms"));
  }
}
