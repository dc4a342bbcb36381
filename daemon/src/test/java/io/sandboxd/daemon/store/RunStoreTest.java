package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.Verification;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RunStoreTest {
  @TempDir Path tmp;

  private final SigningKey key = SigningKey.generate();

  /** A run as the supervisor would store it: signed receipt, attestation and execute segment. */
  private RunRecord record(
      String runId,
      long createdMs,
      List<String> journal,
      Map<String, byte[]> blobs,
      byte[] module) {
    String unit = Blake3.hex(module);
    String grantsId = Blake3.hex(("grants of " + runId).getBytes(StandardCharsets.UTF_8));
    ObjectNode receiptCore =
        CanonicalJson.mapper()
            .createObjectNode()
            .put("schema", "test.receipt/1")
            .put("run_id", runId)
            .put("cpu_time_ms", 7);
    Envelope receipt = Envelope.sign(receiptCore, key);
    ObjectNode attestationCore =
        CanonicalJson.mapper()
            .createObjectNode()
            .put("schema", "test.attestation/1")
            .put("receipt", receipt.address());
    Envelope attestation = Envelope.sign(attestationCore, key);
    RunSegment seg =
        new RunSegment(
            runId,
            0,
            RunSegment.Kind.execute,
            null,
            "host-1",
            key.publicKey().hex(),
            "S2",
            grantsId,
            receipt.address(),
            null,
            0,
            Provenance.Estimator,
            createdMs);
    Envelope segment = Envelope.sign(seg.toCore(), key);
    return new RunRecord(
        runId,
        createdMs,
        unit,
        grantsId,
        "\"Completed\"",
        receipt,
        attestation,
        segment,
        journal,
        blobs,
        module,
        "log of " + runId + "\n",
        "{\"compute\":{}}",
        "run");
  }

  private RunRecord simple(String runId, long createdMs) {
    return record(
        runId,
        createdMs,
        List.of("{\"n\":1,\"run\":\"" + runId + "\"}", "{\"n\":2}"),
        Map.of(Blake3.hex(runId.getBytes(StandardCharsets.UTF_8)), new byte[] {1, 2, 3}),
        ("module " + runId).getBytes(StandardCharsets.UTF_8));
  }

  private Connection raw() throws Exception {
    return DriverManager.getConnection("jdbc:sqlite:" + tmp.resolve("runs.db"));
  }

  private long countWhere(String sql, String arg) throws Exception {
    try (Connection c = raw();
        PreparedStatement st = c.prepareStatement(sql)) {
      st.setString(1, arg);
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static void assertSameEnvelopes(List<Envelope> expected, List<Envelope> actual) {
    assertEquals(
        expected.stream().map(Envelope::toJsonLine).toList(),
        actual.stream().map(Envelope::toJsonLine).toList());
  }

  @Test
  void appendedRunsReadBackTheSameAfterReopen() throws Exception {
    RunRecord a = simple("run-a", 1_000);
    RunRecord b = simple("run-b", 2_000);
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"))) {
      store.append(a);
      store.append(b);
    }
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"))) {
      assertEquals(2, store.count());
      assertEquals(
          List.of("run-b", "run-a"), store.list(10).stream().map(RunSummary::runId).toList());
      assertEquals(List.of("run-b"), store.list(1).stream().map(RunSummary::runId).toList());
      assertEquals(Optional.empty(), store.run("run-z"));

      RunSummary s = store.run("run-a").orElseThrow();
      assertEquals(
          new RunSummary(
              "run-a",
              1_000,
              a.unit(),
              a.grantsId(),
              "\"Completed\"",
              1,
              a.segment().address(),
              "log of run-a\n"),
          s);

      assertSameEnvelopes(List.of(a.segment()), store.records("run-a", "segment"));
      assertSameEnvelopes(List.of(a.receipt()), store.records("run-a", "receipt"));
      assertSameEnvelopes(List.of(a.attestation()), store.records("run-a", "attestation"));
      assertSameEnvelopes(List.of(b.segment()), store.records("run-b", "segment"));
      for (String kind : List.of("segment", "receipt", "attestation")) {
        for (Envelope e : store.records("run-a", kind)) {
          assertInstanceOf(Verification.Valid.class, e.verify(Optional.of(key.publicKey())), kind);
        }
      }
      assertEquals(a.journalEntries(), store.journal("run-a"));
      assertEquals(b.journalEntries(), store.journal("run-b"));
      assertEquals(Map.of(), store.verifyAll(Optional.of(key.publicKey())));
    }
    try (Connection c = raw();
        PreparedStatement st = c.prepareStatement("SELECT bytes FROM modules WHERE address = ?")) {
      st.setString(1, a.unit());
      try (ResultSet rs = st.executeQuery()) {
        assertTrue(rs.next());
        assertArrayEquals(a.module(), rs.getBytes(1));
      }
    }
  }

  @Test
  void duplicateRunIdFailsAndLeavesTheFirstRunIntact() throws Exception {
    RunRecord first = simple("run-1", 1_000);
    String otherBlob = Blake3.hex(new byte[] {9});
    RunRecord dup =
        record(
            "run-1",
            5_000,
            List.of("{\"n\":99}"),
            Map.of(otherBlob, new byte[] {9}),
            "another module".getBytes(StandardCharsets.UTF_8));
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"))) {
      store.append(first);
      StoreException e = assertThrows(StoreException.class, () -> store.append(dup));
      assertTrue(e.getMessage().contains("run-1"), e.getMessage());
      assertTrue(e.getMessage().contains("not stored"), e.getMessage());

      assertEquals(1, store.count());
      assertEquals(1_000, store.run("run-1").orElseThrow().createdMs());
      assertEquals(first.journalEntries(), store.journal("run-1"));
      assertSameEnvelopes(List.of(first.segment()), store.records("run-1", "segment"));
      assertSameEnvelopes(List.of(first.receipt()), store.records("run-1", "receipt"));
      // The store is still usable after the failed transaction.
      store.append(simple("run-2", 2_000));
      assertEquals(2, store.count());
    }
    assertEquals(0, countWhere("SELECT COUNT(*) FROM blobs WHERE address = ?", otherBlob));
    assertEquals(0, countWhere("SELECT COUNT(*) FROM modules WHERE address = ?", dup.unit()));
  }

  @Test
  void failureLateInTheTransactionRollsBackEverything() throws Exception {
    // The journal insert (after the run and its records) fails on a NULL entry.
    RunRecord broken =
        record(
            "run-broken",
            3_000,
            Arrays.asList("{\"n\":1}", null),
            Map.of(),
            "m".getBytes(StandardCharsets.UTF_8));
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"))) {
      store.append(simple("run-ok", 1_000));
      assertThrows(StoreException.class, () -> store.append(broken));
      assertEquals(1, store.count());
      assertEquals(Optional.empty(), store.run("run-broken"));
      assertEquals(List.of(), store.records("run-broken", "segment"));
      assertEquals(List.of(), store.journal("run-broken"));
    }
    assertEquals(0, countWhere("SELECT COUNT(*) FROM records WHERE run_id = ?", "run-broken"));
    assertEquals(0, countWhere("SELECT COUNT(*) FROM journal WHERE run_id = ?", "run-broken"));
  }

  @Test
  void verifyAllReportsATamperedSegmentAndKeepsTheRun() throws Exception {
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"))) {
      store.append(simple("run-good", 1_000));
      store.append(simple("run-bad", 2_000));
    }
    try (Connection c = raw()) {
      String envelope;
      try (PreparedStatement st =
          c.prepareStatement(
              "SELECT envelope FROM records WHERE run_id = 'run-bad' AND kind = 'segment'")) {
        try (ResultSet rs = st.executeQuery()) {
          assertTrue(rs.next());
          envelope = rs.getString(1);
        }
      }
      String tampered = envelope.replace("\"at_ms\":2000", "\"at_ms\":2001");
      assertTrue(!tampered.equals(envelope), "tamper found nothing to change");
      try (PreparedStatement up =
          c.prepareStatement(
              "UPDATE records SET envelope = ? WHERE run_id = 'run-bad' AND kind = 'segment'")) {
        up.setString(1, tampered);
        assertEquals(1, up.executeUpdate());
      }
    }
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"))) {
      Map<String, String> bad = store.verifyAll(Optional.of(key.publicKey()));
      assertEquals(List.of("run-bad"), List.copyOf(bad.keySet()));
      assertTrue(bad.get("run-bad").startsWith("seq 0: "), bad.get("run-bad"));
      assertTrue(bad.get("run-bad").contains("address mismatch"), bad.get("run-bad"));
      // Reported, never dropped.
      assertEquals(2, store.count());
      assertTrue(store.run("run-bad").isPresent());
      assertEquals(1, store.records("run-bad", "segment").size());

      // Another node's key: every run fails the signer check.
      Map<String, String> foreign = store.verifyAll(Optional.of(SigningKey.generate().publicKey()));
      assertEquals(2, foreign.size());
      assertTrue(foreign.get("run-good").contains("expected signer"), foreign.get("run-good"));
    }
  }

  @Test
  void storeFileIsPrivateAndUsesWalWithFullSync() throws Exception {
    Path file = tmp.resolve("state/runs.db");
    try (RunStore store = RunStore.open(file)) {
      store.append(simple("run-1", 1_000));
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
      // SQLite gives the WAL the database file's mode.
      Path wal = tmp.resolve("state/runs.db-wal");
      assertTrue(Files.exists(wal));
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(wal)));
      assertEquals("wal", store.pragma("journal_mode"));
      assertEquals("2", store.pragma("synchronous"), "synchronous=FULL");
      assertEquals(file, store.file());
    }
  }
}
