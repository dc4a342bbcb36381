package io.sandboxd.daemon.store;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.StoredRun;
import java.util.Optional;

/** The kinds of signed record a run keeps in the store, with their stored spelling and schema. */
public enum RecordKind {
  SEGMENT("segment", RunSegment.SCHEMA),
  RECEIPT("receipt", Receipt.SCHEMA),
  ATTESTATION("attestation", Attestation.SCHEMA);

  private final String stored;
  private final String schema;

  RecordKind(String stored, String schema) {
    this.stored = stored;
    this.schema = schema;
  }

  /** The spelling in the {@code records.kind} column (part of the on-disk format). */
  public String stored() {
    return stored;
  }

  /** The schema every envelope of this kind carries. */
  public String schema() {
    return schema;
  }

  /** The address the run's signed store record binds for this kind. */
  String signedAddress(StoredRun s) {
    return switch (this) {
      case SEGMENT -> s.segment();
      case RECEIPT -> s.receipt();
      case ATTESTATION -> s.attestation();
    };
  }

  /** The kind stored as {@code text}, or empty for a spelling this store never writes. */
  public static Optional<RecordKind> ofStored(String text) {
    for (RecordKind k : values()) {
      if (k.stored.equals(text)) {
        return Optional.of(k);
      }
    }
    return Optional.empty();
  }

  @Override
  public String toString() {
    return stored;
  }
}
