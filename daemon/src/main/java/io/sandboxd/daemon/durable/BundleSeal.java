package io.sandboxd.daemon.durable;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import java.nio.charset.StandardCharsets;
import java.util.TreeSet;

/**
 * The exporting node's signature over everything in a run bundle an importing node acts on ({@code
 * sandbox.run-bundle-seal/1}, issue 23): the run id, the node the bundle is for, the module, grants
 * and entry (which no segment signs), the segments and records by address, the logs and the
 * snapshot blobs by address, and the JCP records by address (only when the bundle carries any, so a
 * seal of a bundle without them is as before). Taint and budgets travel inside the signed suspend
 * segment, so they are covered through its address. Digests, not bytes: the seal stays small
 * however large the bundle.
 */
public final class BundleSeal {
  static final String SCHEMA = "sandbox.run-bundle-seal/1";

  private BundleSeal() {}

  /**
   * The seal's core for {@code b}, addressed to {@code destination} (a node key, or "" for any).
   */
  static ObjectNode core(RunBundle b, String destination) {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("schema", SCHEMA);
    o.put("run_id", b.runId());
    o.put("destination", destination);
    o.put("module", Blake3.hex(b.module()));
    o.put("grants", Blake3.hex(b.grantsJson().getBytes(StandardCharsets.UTF_8)));
    o.put("entry", b.entry());
    ArrayNode s = o.putArray("segments");
    b.segments().forEach(e -> s.add(e.address()));
    ArrayNode logs = CanonicalJson.mapper().createArrayNode();
    b.logs().forEach(logs::add);
    o.put("logs", Blake3.hex(CanonicalJson.canonicalize(logs)));
    ArrayNode r = o.putArray("records");
    b.records().forEach(e -> r.add(e.address()));
    ArrayNode blobs = o.putArray("blobs");
    new TreeSet<>(b.blobs().keySet()).forEach(blobs::add);
    if (!b.jcp().isEmpty()) {
      // In order: the order of the amendments is the order they were applied in.
      ArrayNode jcp = o.putArray("jcp");
      b.jcp().forEach(e -> jcp.add(e.address()));
    }
    return o;
  }

  /** {@code b} sealed by {@code key} for {@code destination}. */
  public static RunBundle seal(RunBundle b, SigningKey key, String destination) {
    return b.sealed(Envelope.sign(core(b, destination), key));
  }

  /**
   * The first field of {@code b} its seal does not cover as sealed, or null when every one matches.
   * The envelope's own signature is checked by the caller.
   */
  static String mismatch(RunBundle b, Envelope seal) {
    JsonNode sealed = seal.core();
    ObjectNode now = core(b, sealed.path("destination").asText(""));
    // Every field the seal would have now, in the order core writes them, then any it should not.
    var fields = now.fieldNames();
    while (fields.hasNext()) {
      String field = fields.next();
      if (!java.util.Objects.equals(now.get(field), sealed.get(field))) {
        return field;
      }
    }
    var names = sealed.fieldNames();
    while (names.hasNext()) {
      String n = names.next();
      if (!now.has(n)) {
        return n;
      }
    }
    return null;
  }
}
