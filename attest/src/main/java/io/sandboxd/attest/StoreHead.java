package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Set;

/**
 * The node's signed head of its run store ({@code sandbox.store-head/1}): how many runs it holds
 * and the hash chain over their {@link StoredRun} addresses in store order, so a deleted, inserted
 * or reordered run is detected; and, once the node stored a durable run's segment, how many it
 * stored and the same chain over their addresses ({@code durable}), so a deleted durable run or
 * segment is detected too.
 */
public record StoreHead(
    long runs, String chain, long atMs, long durableSegments, String durableChain) {
  public static final String SCHEMA = "sandbox.store-head/1";

  /** The chain of an empty store: BLAKE3 of empty input. */
  public static final String EMPTY_CHAIN = Blake3.hex(new byte[0]);

  private static final Set<String> FIELDS = Set.of("schema", "runs", "chain", "at_ms", "durable");

  /** A head of single-step runs only (as written before durable runs joined it). */
  public StoreHead(long runs, String chain, long atMs) {
    this(runs, chain, atMs, 0, EMPTY_CHAIN);
  }

  /** {@code BLAKE3(raw(chain) ‖ raw(address))}: the chain after appending one stored run. */
  public static String extend(String chain, String storedRunAddress) {
    byte[] c = Hex.decode(chain, 32, "store-head.chain");
    byte[] a = Hex.decode(storedRunAddress, 32, "store-run address");
    byte[] both = new byte[64];
    System.arraycopy(c, 0, both, 0, 32);
    System.arraycopy(a, 0, both, 32, 32);
    return Blake3.hex(both);
  }

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.core(SCHEMA);
    o.put("runs", runs);
    o.put("chain", chain);
    o.put("at_ms", atMs);
    // Absent while no durable segment was stored: heads of such stores stay byte for byte.
    if (durableSegments > 0) {
      o.putObject("durable").put("segments", durableSegments).put("chain", durableChain);
    }
    return o;
  }

  public static StoreHead fromCore(JsonNode core) {
    JsonReader r = JsonReader.of(core, "store-head", JsonReader.RECORD).only(FIELDS).schema(SCHEMA);
    var durable = r.optionalObject("durable", Set.of("segments", "chain"));
    return new StoreHead(
        r.u64("runs"),
        r.hex32("chain"),
        r.u64("at_ms"),
        durable.map(d -> d.u64("segments")).orElse(0L),
        durable.map(d -> d.hex32("chain")).orElse(EMPTY_CHAIN));
  }
}
