package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** One link of a durable run's hash chain (WIRE.md §2.6): an execute, suspend or resume. */
public record RunSegment(
    String runId,
    long seq,
    Kind kind,
    String prev,
    String hostId,
    String hostPublicKey,
    String tier,
    String grantsId,
    String receipt,
    SnapshotRef snapshot,
    long idleUj,
    Provenance idleProvenance,
    long atMs) {

  public static final String SCHEMA = "sandbox.run-segment/1";

  private static final Set<String> FIELDS =
      Set.of(
          "schema",
          "run_id",
          "seq",
          "kind",
          "prev",
          "host",
          "tier",
          "grants_id",
          "receipt",
          "snapshot",
          "idle_uj",
          "idle_provenance",
          "at_ms");

  /** Segment kinds and which may follow which. */
  public enum Kind {
    execute,
    suspend,
    resume;

    /** execute → suspend | execute; suspend → resume; resume → execute. */
    public boolean mayFollow(Kind previous) {
      return switch (previous) {
        case execute -> this == suspend || this == execute;
        case suspend -> this == resume;
        case resume -> this == execute;
      };
    }

    static Kind parse(String s, String path) {
      for (Kind k : values()) {
        if (k.name().equals(s)) {
          return k;
        }
      }
      throw new AttestException(path + ": unknown segment kind \"" + s + "\"");
    }
  }

  /** What a suspend froze and a resume thawed; a resume repeats it byte for byte. */
  public record SnapshotRef(
      String fs,
      String memory,
      String manifest,
      String grantsId,
      List<String> taint,
      String journalRoot) {
    private static final Set<String> FIELDS =
        Set.of("fs", "memory", "manifest", "grants_id", "taint", "journal_root");

    public SnapshotRef {
      taint = List.copyOf(taint.stream().distinct().sorted().toList());
    }

    ObjectNode toJson() {
      ObjectNode o = CanonicalJson.mapper().createObjectNode();
      o.put("fs", fs);
      o.put("memory", memory);
      o.put("manifest", manifest);
      o.put("grants_id", grantsId);
      ArrayNode t = o.putArray("taint");
      taint.forEach(t::add);
      o.put("journal_root", journalRoot);
      return o;
    }

    static SnapshotRef fromJson(JsonNode n, String path) {
      JsonReader r = JsonReader.of(n, path, FIELDS, JsonReader.RECORD);
      JsonNode t = r.required("taint");
      if (!t.isArray()) {
        throw new AttestException(path + ".taint: expected an array");
      }
      List<String> taint = new ArrayList<>();
      for (int i = 0; i < t.size(); i++) {
        if (!t.get(i).isTextual()) {
          throw new AttestException(path + ".taint[" + i + "]: expected a string");
        }
        taint.add(t.get(i).textValue());
      }
      return new SnapshotRef(
          r.hex32("fs"),
          r.nullableHex32("memory"),
          r.hex32("manifest"),
          r.hex32("grants_id"),
          taint,
          r.hex32("journal_root"));
    }
  }

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("schema", SCHEMA);
    o.put("run_id", runId);
    o.put("seq", seq);
    o.put("kind", kind.name());
    o.put("prev", prev);
    o.putObject("host").put("id", hostId).put("public_key", hostPublicKey);
    o.put("tier", tier);
    o.put("grants_id", grantsId);
    o.put("receipt", receipt);
    if (snapshot == null) {
      o.putNull("snapshot");
    } else {
      o.set("snapshot", snapshot.toJson());
    }
    o.put("idle_uj", idleUj);
    o.put("idle_provenance", idleProvenance.name());
    o.put("at_ms", atMs);
    return o;
  }

  public static RunSegment fromCore(JsonNode core) {
    JsonReader r = JsonReader.of(core, "segment", JsonReader.RECORD).only(FIELDS).schema(SCHEMA);
    JsonReader h = r.object("host").only(Set.of("id", "public_key"));
    JsonNode snap = r.required("snapshot");
    return new RunSegment(
        r.string("run_id"),
        r.u64("seq"),
        Kind.parse(r.string("kind"), "segment.kind"),
        r.nullableHex32("prev"),
        h.string("id"),
        h.hex32("public_key"),
        r.string("tier"),
        r.hex32("grants_id"),
        r.nullableHex32("receipt"),
        snap.isNull() ? null : SnapshotRef.fromJson(snap, "segment.snapshot"),
        r.u64("idle_uj"),
        Provenance.parse(r.string("idle_provenance"), "segment.idle_provenance"),
        r.u64("at_ms"));
  }
}
