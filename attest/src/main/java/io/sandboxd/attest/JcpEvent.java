package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;

/**
 * An event offered to a standing grant: a JSON object with a string {@code type}; its address
 * (BLAKE3 of its canonical bytes) is what a minted child's {@code event} names.
 */
public record JcpEvent(JsonNode doc) {
  /** Largest event accepted, in bytes of its canonical form. */
  public static final int MAX_BYTES = 64 * 1024;

  public JcpEvent {
    JsonReader r = JsonReader.of(doc, "event", JsonReader.RECORD);
    if (r.string("type").isEmpty()) {
      throw new AttestException("event.type: must not be empty");
    }
    if (CanonicalJson.recordString(doc).getBytes(StandardCharsets.UTF_8).length > MAX_BYTES) {
      throw new AttestException("event: larger than " + MAX_BYTES + " bytes");
    }
    doc = doc.deepCopy();
  }

  /** Parses UTF-8 JSON strictly (duplicate keys, bad UTF-8 refused). */
  public static JcpEvent parse(byte[] utf8) {
    if (utf8.length > 4 * MAX_BYTES) {
      throw new AttestException("event: larger than " + 4 * MAX_BYTES + " bytes");
    }
    try {
      return new JcpEvent(CanonicalJson.parse(utf8));
    } catch (CanonicalJsonException e) {
      throw new AttestException("event: " + e.getMessage());
    }
  }

  public String type() {
    return doc.get("type").textValue();
  }

  public String address() {
    return Envelope.addressOf(doc);
  }
}
