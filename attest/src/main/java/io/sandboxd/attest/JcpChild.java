package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Set;

/**
 * A child grant minted under a standing grant ({@code jcp.child/1}, WIRE.md §2.11), signed by the
 * policy's holder and hash-chained per policy: {@code seq} dense from 0, {@code prev} the previous
 * child's address ({@code null} at 0), {@code event} the BLAKE3 address of the event's canonical
 * bytes, {@code grantsId} the BLAKE3 address of {@code grants}.
 */
public record JcpChild(
    String policy,
    long seq,
    String prev,
    String event,
    JsonNode grants,
    String grantsId,
    long mintedMs) {

  public static final String SCHEMA = "jcp.child/1";

  private static final Set<String> FIELDS =
      Set.of("schema", "policy", "seq", "prev", "event", "grants", "grants_id", "minted_ms");

  public JcpChild {
    grants = grants.deepCopy();
    if ((seq == 0) != (prev == null)) {
      throw new AttestException("child.prev: must be null exactly at seq 0");
    }
    Envelope.requireAddress(grants, grantsId, "child.grants_id", "the grants");
  }

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.core(SCHEMA);
    o.put("policy", policy);
    o.put("seq", seq);
    o.put("prev", prev); // null at seq 0, written as JSON null
    o.put("event", event);
    o.set("grants", grants.deepCopy());
    o.put("grants_id", grantsId);
    o.put("minted_ms", mintedMs);
    return o;
  }

  /** Parses a child core strictly. */
  public static JcpChild fromCore(JsonNode core) {
    JsonReader r = JsonReader.of(core, "child", FIELDS, JsonReader.RECORD).schema(SCHEMA);
    return new JcpChild(
        r.hex32("policy"),
        r.u64("seq"),
        r.nullableHex32("prev"),
        r.hex32("event"),
        r.object("grants").node(),
        r.hex32("grants_id"),
        r.u64("minted_ms"));
  }
}
