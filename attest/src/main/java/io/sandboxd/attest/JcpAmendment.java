package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Set;

/**
 * An amendment ({@code jcp.amendment/1}, WIRE.md §2.11), signed by the issuer: from {@code
 * checkpoint} onward the run is held to {@code newGrants}, which must be within the grants in
 * force. Whether it is accepted is the enforcer's decision; this type only reads and verifies the
 * record.
 */
public record JcpAmendment(
    String checkpoint, String issuer, JsonNode newGrants, String newGrantsId, String reason) {

  public static final String SCHEMA = "jcp.amendment/1";

  /** Longest reason accepted (it is stored and shown, never interpreted). */
  public static final int MAX_REASON_CHARS = 1024;

  private static final Set<String> FIELDS =
      Set.of("schema", "checkpoint", "issuer", "new_grants", "new_grants_id", "reason");

  public JcpAmendment {
    newGrants = newGrants.deepCopy();
    if (reason.length() > MAX_REASON_CHARS) {
      throw new AttestException("amendment.reason: longer than " + MAX_REASON_CHARS + " chars");
    }
    Envelope.requireAddress(newGrants, newGrantsId, "amendment.new_grants_id", "new_grants");
  }

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.core(SCHEMA);
    o.put("checkpoint", checkpoint);
    o.put("issuer", issuer);
    o.set("new_grants", newGrants.deepCopy());
    o.put("new_grants_id", newGrantsId);
    o.put("reason", reason);
    return o;
  }

  /** Parses an amendment core strictly. */
  public static JcpAmendment fromCore(JsonNode core) {
    JsonReader r = JsonReader.of(core, "amendment", FIELDS, JsonReader.RECORD).schema(SCHEMA);
    return new JcpAmendment(
        r.hex32("checkpoint"),
        JcpMintPolicy.key(r, "issuer"),
        r.object("new_grants").node(),
        r.hex32("new_grants_id"),
        r.string("reason"));
  }
}
