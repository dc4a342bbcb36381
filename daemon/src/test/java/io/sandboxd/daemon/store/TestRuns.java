package io.sandboxd.daemon.store;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.MerkleTree;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.TestRecords;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Runs made of real signed records, as the supervisor stores them, for store tests. */
final class TestRuns {
  private TestRuns() {}

  /** A run as the supervisor would store it: signed receipt, attestation and execute segment. */
  static RunRecord record(
      SigningKey key,
      String runId,
      long createdMs,
      List<String> journal,
      Map<String, byte[]> blobs,
      byte[] module) {
    return builder(key, runId, createdMs, journal, blobs, module, "\"Completed\"", grantsOf(runId))
        .build();
  }

  /**
   * As {@link #record}, under the canonical grants text {@code grantsJson}, with the outcome the
   * run row claims (one that differs from the attestation's makes the append fail after the run's
   * rows are written, so the rollback is what is tested), before it is built: a test may add to the
   * run (a claim).
   */
  static RunRecord.Builder builder(
      SigningKey key,
      String runId,
      long createdMs,
      List<String> journal,
      Map<String, byte[]> blobs,
      byte[] module,
      String outcomeJson,
      String grantsJson) {
    String unit = Blake3.hex(module);
    // grants_id names the grants text, as admission makes it: the store keeps the text once.
    String grantsId = Blake3.hex(grantsJson.getBytes(StandardCharsets.UTF_8));
    Receipt receiptRecord =
        new Receipt(
            runId,
            unit,
            grantsId,
            "S2",
            Map.of(DeviceClass.Cpu, new ClassEnergy(5, Provenance.Estimator, "estimator", 1, 0)),
            0,
            List.of(),
            7,
            0,
            1,
            Receipt.IoUse.NONE,
            Receipt.NetUse.NONE,
            createdMs,
            createdMs + 1);
    Envelope receipt = Envelope.sign(receiptRecord.toCore(), key);
    List<byte[]> leaves = new ArrayList<>();
    for (String e : journal) {
      leaves.add(
          e == null
              ? new byte[0]
              : Blake3.hash(CanonicalJson.canonicalize(CanonicalJson.parse(e))));
    }
    Attestation attestationRecord =
        TestRecords.attestation(
            key,
            "host-1",
            grantsId,
            receipt.address(),
            unit,
            Hex.encode(MerkleTree.blake3(leaves).root()),
            new Outcome.Completed(),
            createdMs + 2);
    Envelope attestation = Envelope.sign(attestationRecord.toCore(), key);
    RunSegment seg =
        TestRecords.execute(runId, 0, null, "host-1", key, grantsId, receipt.address(), createdMs);
    Envelope segment = Envelope.sign(seg.toCore(), key);
    return RunRecord.builder()
        .run(runId, createdMs)
        .unit(unit, grantsId)
        .outcomeJson(outcomeJson)
        .signed(receipt, attestation, segment)
        .journal(journal, blobs)
        .log("log of " + runId + "\n")
        .submission(module, grantsJson, "run");
  }

  /** The canonical grants text run {@code runId} is stored under (one per run). */
  static String grantsOf(String runId) {
    return "{\"compute\":{},\"run\":\"" + runId + "\"}";
  }

  /** A run with a two-entry journal, one blob and its own module. */
  static RunRecord simple(SigningKey key, String runId, long createdMs) {
    return simpleBuilder(key, runId, createdMs).build();
  }

  private static RunRecord.Builder simpleBuilder(SigningKey key, String runId, long createdMs) {
    return builder(
        key,
        runId,
        createdMs,
        List.of("{\"n\":1,\"run\":\"" + runId + "\"}", "{\"n\":2}"),
        Map.of(
            Blake3.hex(runId.getBytes(StandardCharsets.UTF_8)),
            runId.getBytes(StandardCharsets.UTF_8)),
        ("module " + runId).getBytes(StandardCharsets.UTF_8),
        "\"Completed\"",
        grantsOf(runId));
  }

  /** As {@link #simple}, started on a warm instance: its signed claim is stored with it. */
  static RunRecord claimed(SigningKey key, String runId, long createdMs) {
    Envelope claim =
        Envelope.sign(
            new io.sandboxd.attest.WarmpoolClaim(
                    "pool-a",
                    "instance-" + runId,
                    createdMs - 5,
                    createdMs,
                    "S2",
                    null,
                    0,
                    Provenance.Estimator,
                    runId)
                .toCore(),
            key);
    return simpleBuilder(key, runId, createdMs).claim(java.util.Optional.of(claim)).build();
  }

  /**
   * Appends runs {@code from} .. {@code from + n - 1} ("run-00042", created at 1,000 + i) at once.
   */
  static void fill(RunStore store, SigningKey key, int from, int n) {
    List<RunRecord> batch = new ArrayList<>();
    for (int i = from; i < from + n; i++) {
      batch.add(simple(key, String.format("run-%05d", i), 1_000 + i));
    }
    store.appendAll(batch);
  }

  /** Changes the store file behind its back, as an attacker with the file would; must hit a row. */
  static void change(java.nio.file.Path file, String statement) throws java.sql.SQLException {
    try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:sqlite:" + file);
        java.sql.Statement st = c.createStatement()) {
      if (st.executeUpdate(statement) == 0) {
        throw new AssertionError("changed no row: " + statement);
      }
    }
  }
}
