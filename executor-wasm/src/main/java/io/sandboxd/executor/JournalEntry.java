package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * One replay-journal entry (WIRE.md §2.5), recorded by {@link Journal} and followed by {@link
 * ReplaySource}: the call, the addresses of its request and response, the decision, and the run's
 * taint after it. Its canonical bytes (the stored form and the merkle leaf's input) come from
 * {@link #canonicalBytes()} alone.
 */
public record JournalEntry(
    long seq,
    String call,
    String request,
    String response,
    String decision,
    List<String> taintAfter) {
  public static final String SCHEMA = "sandbox.journal-entry/1";

  private static final Set<String> FIELDS =
      Set.of("schema", "seq", "call", "request", "response", "decision", "taint_after");

  public JournalEntry {
    taintAfter = List.copyOf(taintAfter);
  }

  /** The entry as JSON, its keys as stored. */
  public ObjectNode toJson() {
    ObjectNode e = CanonicalJson.mapper().createObjectNode();
    e.put("schema", SCHEMA);
    e.put("seq", seq);
    e.put("call", call);
    e.put("request", request);
    e.put("response", response);
    e.put("decision", decision);
    ArrayNode t = e.putArray("taint_after");
    taintAfter.forEach(t::add);
    return e;
  }

  /** JCS bytes: what the run store keeps and what the entry's merkle leaf hashes. */
  public byte[] canonicalBytes() {
    return CanonicalJson.canonicalize(toJson());
  }

  public String canonicalString() {
    return new String(canonicalBytes(), StandardCharsets.UTF_8);
  }

  /** BLAKE3 of the canonical bytes: the data of the entry's merkle leaf. */
  byte[] leafData() {
    return Blake3.hash(canonicalBytes());
  }

  /** Reads a stored entry (canonical JSON text); a malformed one is an {@link AttestException}. */
  public static JournalEntry parse(String text) {
    return fromJson(CanonicalJson.parse(text));
  }

  /** Reads an entry strictly: exactly the fields {@link #toJson()} writes, of their types. */
  public static JournalEntry fromJson(JsonNode node) {
    if (node == null || !node.isObject()) {
      throw new AttestException("journal entry: not an object");
    }
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!FIELDS.contains(f)) {
        throw new AttestException("journal entry: unknown field $." + f);
      }
    }
    String schema = text(node, "schema");
    if (!schema.equals(SCHEMA)) {
      throw new AttestException("journal entry: $.schema is " + schema + ", expected " + SCHEMA);
    }
    JsonNode seq = node.get("seq");
    if (seq == null || !seq.isIntegralNumber() || !seq.canConvertToLong() || seq.longValue() < 0) {
      throw new AttestException("journal entry: $.seq must be a non-negative integer");
    }
    JsonNode taint = node.get("taint_after");
    if (taint == null || !taint.isArray()) {
      throw new AttestException("journal entry: $.taint_after must be an array");
    }
    List<String> labels = new ArrayList<>(taint.size());
    for (int i = 0; i < taint.size(); i++) {
      if (!taint.get(i).isTextual()) {
        throw new AttestException("journal entry: $.taint_after[" + i + "] must be a string");
      }
      labels.add(taint.get(i).textValue());
    }
    return new JournalEntry(
        seq.longValue(),
        text(node, "call"),
        text(node, "request"),
        text(node, "response"),
        text(node, "decision"),
        labels);
  }

  private static String text(JsonNode node, String field) {
    JsonNode v = node.get(field);
    if (v == null || !v.isTextual()) {
      throw new AttestException("journal entry: $." + field + " must be a string");
    }
    return v.textValue();
  }
}
