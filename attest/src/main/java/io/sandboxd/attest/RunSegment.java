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
    long atMs,
    Budget budget) {

  public static final String SCHEMA = "sandbox.run-segment/1";

  /** A segment without a budget (as written before issue 23; still read and verified). */
  public RunSegment(
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
    this(
        runId,
        seq,
        kind,
        prev,
        hostId,
        hostPublicKey,
        tier,
        grantsId,
        receipt,
        snapshot,
        idleUj,
        idleProvenance,
        atMs,
        null);
  }

  /**
   * The run's budget as of the end of this segment (WIRE.md §2.6 {@code budget}): what its grant
   * allows (CPU ms, µJ) and what the whole run has consumed so far by its receipts' {@code
   * cpu_time_ms} and {@code total_uj} (idle energy never counts, Q7). Cumulative, so a verifier can
   * check that budgets hold per run however many times it parked.
   */
  public record Budget(long grantedCpuMs, long grantedUj, long consumedCpuMs, long consumedUj) {
    private static final Set<String> FIELDS = Set.of("granted", "consumed");
    private static final Set<String> FIGURES = Set.of("cpu_time_ms", "energy_uj");

    public Budget {
      if (grantedCpuMs < 0 || grantedUj < 0 || consumedCpuMs < 0 || consumedUj < 0) {
        throw new AttestException("segment.budget: negative figure");
      }
    }

    /** Whether the run has consumed more than its grant allows, in CPU or energy. */
    public boolean exceeded() {
      return consumedCpuMs > grantedCpuMs || consumedUj > grantedUj;
    }

    ObjectNode toJson() {
      ObjectNode o = CanonicalJson.mapper().createObjectNode();
      o.putObject("granted").put("cpu_time_ms", grantedCpuMs).put("energy_uj", grantedUj);
      o.putObject("consumed").put("cpu_time_ms", consumedCpuMs).put("energy_uj", consumedUj);
      return o;
    }

    static Budget fromJson(JsonReader r) {
      JsonReader g = r.object("granted").only(FIGURES);
      JsonReader c = r.object("consumed").only(FIGURES);
      return new Budget(
          g.u64("cpu_time_ms"), g.u64("energy_uj"), c.u64("cpu_time_ms"), c.u64("energy_uj"));
    }
  }

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
          "at_ms",
          "budget");

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
      return JsonReader.constant(Kind.class, s, path, "segment kind");
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
    ObjectNode o = CanonicalJson.core(SCHEMA);
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
    if (budget != null) {
      o.set("budget", budget.toJson());
    }
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
        r.u64("at_ms"),
        r.optionalObject("budget", Budget.FIELDS).map(Budget::fromJson).orElse(null));
  }
}
