package io.sandboxd.daemon.durable;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JsonReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A moved run (issue 12 "Moving a run"), self-contained: its segments in seq order with the log of
 * each, its receipts and attestations, the module, the canonical grants and entry, and every
 * snapshot blob by address, and the run's signed JCP records when it has any (its mint policy and
 * child, checkpoints, amendments: optional, WIRE.md §2.6). Canonical JSON ({@code
 * sandbox.run-bundle/1}); bytes travel as base64. Parsing is strict; what the contents prove is
 * checked by {@link DurableRuns} on import.
 */
public record RunBundle(
    String runId,
    byte[] module,
    String grantsJson,
    String entry,
    List<Envelope> segments,
    List<String> logs,
    List<Envelope> records,
    Map<String, byte[]> blobs,
    List<Envelope> jcp,
    Optional<Envelope> seal) {
  static final String SCHEMA = "sandbox.run-bundle/1";

  /** This bundle with {@code seal}, the exporting node's signature over what an import acts on. */
  RunBundle sealed(Envelope seal) {
    return new RunBundle(
        runId, module, grantsJson, entry, segments, logs, records, blobs, jcp, Optional.of(seal));
  }

  private static final java.util.regex.Pattern RUN_ID =
      java.util.regex.Pattern.compile("[A-Za-z0-9_-]{1,64}");

  private static final Set<String> FIELDS =
      Set.of(
          "schema",
          "run_id",
          "module",
          "grants",
          "entry",
          "segments",
          "logs",
          "records",
          "blobs",
          "jcp",
          "seal");

  public byte[] toBytes() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("schema", SCHEMA);
    o.put("run_id", runId);
    o.put("module", Base64.getEncoder().encodeToString(module));
    o.put("grants", grantsJson);
    o.put("entry", entry);
    ArrayNode s = o.putArray("segments");
    segments.forEach(e -> s.add(e.toJson()));
    ArrayNode l = o.putArray("logs");
    logs.forEach(l::add);
    ArrayNode r = o.putArray("records");
    records.forEach(e -> r.add(e.toJson()));
    ObjectNode b = o.putObject("blobs");
    blobs.forEach((k, v) -> b.put(k, Base64.getEncoder().encodeToString(v)));
    // Absent when empty: a bundle of a run without JCP records is byte for byte as before.
    if (!jcp.isEmpty()) {
      ArrayNode j = o.putArray("jcp");
      jcp.forEach(e -> j.add(e.toJson()));
    }
    seal.ifPresent(e -> o.set("seal", e.toJson()));
    return CanonicalJson.canonicalize(o);
  }

  /** Parses a bundle; anything malformed is a {@link DurableRunException.BadBundle} naming it. */
  static RunBundle parse(byte[] bytes) {
    try {
      JsonNode n = CanonicalJson.parse(bytes);
      JsonReader r = JsonReader.of(n, "bundle", FIELDS, JsonReader.RECORD).schema(SCHEMA);
      List<Envelope> segments = r.list("segments", (e, p) -> envelope(e, p));
      List<String> logs = r.strings("logs", List.of());
      List<Envelope> records = r.list("records", (e, p) -> envelope(e, p));
      List<Envelope> jcp = r.list("jcp", (e, p) -> envelope(e, p));
      JsonNode blobs = r.required("blobs");
      if (!blobs.isObject()) {
        throw new AttestException("bundle.blobs: expected an object");
      }
      Map<String, byte[]> b = new LinkedHashMap<>();
      var it = blobs.fields();
      while (it.hasNext()) {
        var e = it.next();
        b.put(e.getKey(), base64(e.getValue(), "bundle.blobs." + e.getKey()));
      }
      String runId = r.string("run_id");
      // It names directories on the importing node: a plain name, never a path.
      if (!RUN_ID.matcher(runId).matches()) {
        throw new AttestException(
            "bundle.run_id: \"" + runId + "\" is not a run id (1-64 of A-Z a-z 0-9 _ -)");
      }
      return new RunBundle(
          runId,
          base64(r.required("module"), "bundle.module"),
          r.string("grants"),
          r.string("entry"),
          segments,
          logs,
          records,
          b,
          jcp,
          r.optional("seal").map(e -> envelope(e, "bundle.seal")));
    } catch (AttestException | IllegalArgumentException e) {
      throw new DurableRunException.BadBundle(e.getMessage(), e);
    }
  }

  private static Envelope envelope(JsonNode n, String path) {
    try {
      return Envelope.fromJson(n);
    } catch (AttestException e) {
      throw new AttestException(path + ": " + e.getMessage(), e);
    }
  }

  private static byte[] base64(JsonNode n, String path) {
    if (!n.isTextual()) {
      throw new AttestException(path + ": expected base64 text");
    }
    try {
      return Base64.getDecoder().decode(n.textValue().getBytes(StandardCharsets.US_ASCII));
    } catch (IllegalArgumentException e) {
      throw new AttestException(path + ": not base64: " + e.getMessage());
    }
  }

  static List<Envelope> all(List<Envelope> segments, List<Envelope> records) {
    List<Envelope> out = new ArrayList<>(records);
    out.addAll(segments);
    return out;
  }
}
