package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Set;

/**
 * The node's signed statement of what its run store holds for one run ({@code
 * sandbox.store-run/1}): the columns a listing shows, bound to the run's signed records, and the
 * run's position in the store's hash chain.
 */
public record StoredRun(
    long position,
    String runId,
    long createdMs,
    String unit,
    String grantsId,
    Outcome outcome,
    String entry,
    String grants,
    String log,
    long logBytes,
    String segment,
    String receipt,
    String attestation) {

  public static final String SCHEMA = "sandbox.store-run/1";

  private static final Set<String> FIELDS =
      Set.of(
          "schema",
          "position",
          "run_id",
          "created_ms",
          "unit",
          "grants_id",
          "outcome",
          "entry",
          "grants",
          "log",
          "segment",
          "receipt",
          "attestation");

  /** The address a stored text is bound by: BLAKE3-256 of its UTF-8 bytes. */
  public static String textAddress(String text) {
    return Blake3.hex(text.getBytes(StandardCharsets.UTF_8));
  }

  /** The UTF-8 length of a stored text. */
  public static long textBytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8).length;
  }

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.core(SCHEMA);
    o.put("position", position);
    o.put("run_id", runId);
    o.put("created_ms", createdMs);
    o.put("unit", unit);
    o.put("grants_id", grantsId);
    o.set("outcome", outcome.toJson());
    o.put("entry", entry);
    o.put("grants", grants);
    o.putObject("log").put("address", log).put("bytes", logBytes);
    o.put("segment", segment);
    o.put("receipt", receipt);
    o.put("attestation", attestation);
    return o;
  }

  public static StoredRun fromCore(JsonNode core) {
    JsonReader r = JsonReader.of(core, "store-run", JsonReader.RECORD).only(FIELDS).schema(SCHEMA);
    JsonReader log = r.object("log").only(Set.of("address", "bytes"));
    return new StoredRun(
        r.u64("position"),
        r.string("run_id"),
        r.u64("created_ms"),
        r.hex32("unit"),
        r.hex32("grants_id"),
        Outcome.fromJson(r.required("outcome"), "store-run.outcome"),
        r.string("entry"),
        r.hex32("grants"),
        log.hex32("address"),
        log.u64("bytes"),
        r.hex32("segment"),
        r.hex32("receipt"),
        r.hex32("attestation"));
  }
}
