package io.sandboxd.daemon.store;

import io.sandboxd.attest.Envelope;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Everything one execute step leaves behind, appended to the store in one transaction: the signed
 * records, the replay journal and its blobs, the module bytes, the unit's log, and the submission's
 * canonical grants and entry (so the run can be replayed), and a WASI command's inputs and outputs
 * ({@code io}, null for a unit without WASI). Built with {@link #builder()}.
 */
public record RunRecord(
    String runId,
    long createdMs,
    String unit,
    String grantsId,
    String outcomeJson,
    Envelope receipt,
    Envelope attestation,
    Envelope segment,
    List<String> journalEntries,
    Map<String, byte[]> blobs,
    byte[] module,
    String log,
    String grantsJson,
    String entry,
    Optional<Envelope> claim,
    RunIo io,
    java.util.OptionalLong submitterUid) {

  public static Builder builder() {
    return new Builder();
  }

  /** Gathers a record by name; the journal, log, grants and entry default to empty. */
  public static final class Builder {
    private String runId;
    private long createdMs;
    private String unit;
    private String grantsId;
    private String outcomeJson;
    private Envelope receipt;
    private Envelope attestation;
    private Envelope segment;
    private List<String> journalEntries = List.of();
    private Map<String, byte[]> blobs = Map.of();
    private byte[] module;
    private String log = "";
    private String grantsJson = "";
    private String entry = "";
    private Optional<Envelope> claim = Optional.empty();

    private Builder() {}

    /** The signed warm-pool claim of the instance the run ran on, stored with the run. */
    public Builder claim(Optional<Envelope> claim) {
      this.claim = claim;
      return this;
    }

    private RunIo io;

    /** A WASI command's inputs and outputs; unset (null) for a unit without WASI. */
    public Builder io(RunIo io) {
      this.io = io;
      return this;
    }

    private java.util.OptionalLong submitterUid = java.util.OptionalLong.empty();

    /** The uid that submitted the run (SO_PEERCRED), when known. */
    public Builder submitter(java.util.OptionalLong uid) {
      this.submitterUid = uid;
      return this;
    }

    /** The run's id and when it was created. */
    public Builder run(String runId, long createdMs) {
      this.runId = runId;
      this.createdMs = createdMs;
      return this;
    }

    /** The unit's address and the grants' id it ran under. */
    public Builder unit(String unit, String grantsId) {
      this.unit = unit;
      this.grantsId = grantsId;
      return this;
    }

    public Builder outcomeJson(String outcomeJson) {
      this.outcomeJson = outcomeJson;
      return this;
    }

    /** The signed records of the step, in the order they chain. */
    public Builder signed(Envelope receipt, Envelope attestation, Envelope segment) {
      this.receipt = receipt;
      this.attestation = attestation;
      this.segment = segment;
      return this;
    }

    public Builder journal(List<String> entries, Map<String, byte[]> blobs) {
      this.journalEntries = entries;
      this.blobs = blobs;
      return this;
    }

    public Builder log(String log) {
      this.log = log;
      return this;
    }

    /**
     * What was submitted: the module, its canonical grants and entry export (a replay reruns it).
     */
    public Builder submission(byte[] module, String grantsJson, String entry) {
      this.module = module;
      this.grantsJson = grantsJson;
      this.entry = entry;
      return this;
    }

    public RunRecord build() {
      return new RunRecord(
          Objects.requireNonNull(runId, "runId"),
          createdMs,
          Objects.requireNonNull(unit, "unit"),
          Objects.requireNonNull(grantsId, "grantsId"),
          Objects.requireNonNull(outcomeJson, "outcomeJson"),
          Objects.requireNonNull(receipt, "receipt"),
          Objects.requireNonNull(attestation, "attestation"),
          Objects.requireNonNull(segment, "segment"),
          journalEntries,
          blobs,
          Objects.requireNonNull(module, "module"),
          log,
          grantsJson,
          entry,
          claim,
          io,
          submitterUid);
    }
  }
}
