package io.sandboxd.daemon.store;

import io.sandboxd.attest.Envelope;
import java.util.List;
import java.util.Map;

/**
 * Everything one execute step leaves behind, appended to the store in one transaction: the signed
 * records, the replay journal and its blobs, the module bytes, the unit's log, and the submission's
 * canonical grants and entry (so the run can be replayed).
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
    String entry) {}
