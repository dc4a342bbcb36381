package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Optional;
import java.util.Set;

/**
 * An authenticated event ({@code jcp.event/1}, WIRE.md §2.14): the event document with a nonce and
 * an expiry, signed by the policy's issuer or a configured event source. Its address is what a
 * minted child's {@code event} names, so the nonce is bound into every child it mints.
 *
 * @param event the event document (an object with a string {@code type})
 * @param nonce 1 to 128 printable ASCII characters, never accepted twice from one signer
 * @param notAfterMs the event mints nothing after this time
 */
public record JcpSignedEvent(JcpEvent event, String nonce, long notAfterMs) {
  public static final String SCHEMA = "jcp.event/1";

  private static final Set<String> FIELDS = Set.of("schema", "event", "nonce", "not_after_ms");

  public JcpSignedEvent {
    if (nonce.isEmpty()
        || nonce.length() > 128
        || !nonce.chars().allMatch(c -> c > 32 && c < 127)) {
      throw new AttestException("event.nonce: 1 to 128 printable ASCII characters, no spaces");
    }
  }

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.core(SCHEMA);
    o.set("event", event.doc().deepCopy());
    o.put("nonce", nonce);
    o.put("not_after_ms", notAfterMs);
    return o;
  }

  /** Parses a core strictly: every field present, no other. */
  public static JcpSignedEvent fromCore(JsonNode core) {
    JsonReader r = JsonReader.of(core, "event", FIELDS, JsonReader.RECORD).schema(SCHEMA);
    return new JcpSignedEvent(
        new JcpEvent(r.object("event").node()), r.string("nonce"), r.u64("not_after_ms"));
  }

  /**
   * Reads an envelope and checks its address and signature (the signer, whoever it is, is the
   * caller's to judge).
   */
  public static JcpSignedEvent verified(Envelope env) {
    JcpSignedEvent e = fromCore(env.core());
    if (env.verify(Optional.empty()) instanceof Verification.Invalid inv) {
      throw new AttestException("event: " + inv.reason());
    }
    return e;
  }
}
