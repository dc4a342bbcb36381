package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.Envelope;
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

  private RunRecord record(
      String runId,
      long createdMs,
      List<String> journal,
      Map<String, byte[]> blobs,
      byte[] module) {
    return TestRuns.record(key, runId, createdMs, journal, blobs, module);
  }

  private RunRecord simple(String runId, long createdMs) {
    return TestRuns.simple(key, runId, createdMs);
  }

  private Connection raw() throws Exception {
    Connection c = DriverManager.getConnection("jdbc:sqlite:" + tmp.resolve("runs.db"));
    StoreEncoding.addSqlFunctions(c);
    return c;
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
  void storeConnectionsAskForNoGeneratedKeys() throws Exception {
    // With them on, the driver ran SELECT last_insert_rowid() after every INSERT of every run.
    Path file = tmp.resolve("runs.db");
    try (RunStore store = RunStore.open(file, key)) {
      store.append(simple("r1", 1));
    }
    for (boolean readOnly : new boolean[] {false, true}) {
      try (Connection c = StoreDb.connect(file, readOnly)) {
        org.sqlite.SQLiteConnection sqlite = c.unwrap(org.sqlite.SQLiteConnection.class);
        assertEquals(
            false,
            sqlite.getConnectionConfig().isGetGeneratedKeys(),
            "read-only " + readOnly + ": generated keys on");
        assertEquals(readOnly, c.isReadOnly(), "read-only " + readOnly);
      }
    }
  }

  @Test
  void appendedRunsReadBackTheSameAfterReopen() throws Exception {
    RunRecord a = simple("run-a", 1_000);
    RunRecord b = simple("run-b", 2_000);
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), key)) {
      store.append(a);
      store.append(b);
    }
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), key)) {
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
              "log of run-a\n",
              Optional.empty()),
          s);

      assertSameEnvelopes(List.of(a.segment()), store.records("run-a", RecordKind.SEGMENT));
      assertSameEnvelopes(List.of(a.receipt()), store.records("run-a", RecordKind.RECEIPT));
      assertSameEnvelopes(List.of(a.attestation()), store.records("run-a", RecordKind.ATTESTATION));
      assertSameEnvelopes(List.of(b.segment()), store.records("run-b", RecordKind.SEGMENT));
      for (RecordKind kind : RecordKind.values()) {
        for (Envelope e : store.records("run-a", kind)) {
          assertInstanceOf(
              Verification.Valid.class, e.verify(Optional.of(key.publicKey())), kind.stored());
        }
      }
      assertEquals(a.journalEntries(), store.journal("run-a"));
      assertEquals(b.journalEntries(), store.journal("run-b"));
      assertEquals(List.of(), store.verifyAll());
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
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), key)) {
      store.append(first);
      StoreException e = assertThrows(StoreException.class, () -> store.append(dup));
      assertTrue(e.getMessage().contains("run-1"), e.getMessage());
      assertTrue(e.getMessage().contains("not stored"), e.getMessage());

      assertEquals(1, store.count());
      assertEquals(1_000, store.run("run-1").orElseThrow().createdMs());
      assertEquals(first.journalEntries(), store.journal("run-1"));
      assertSameEnvelopes(List.of(first.segment()), store.records("run-1", RecordKind.SEGMENT));
      assertSameEnvelopes(List.of(first.receipt()), store.records("run-1", RecordKind.RECEIPT));
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
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), key)) {
      store.append(simple("run-ok", 1_000));
      assertThrows(StoreException.class, () -> store.append(broken));
      assertEquals(1, store.count());
      assertEquals(Optional.empty(), store.run("run-broken"));
      assertEquals(List.of(), store.records("run-broken", RecordKind.SEGMENT));
      assertEquals(List.of(), store.journal("run-broken"));
    }
    assertEquals(
        0,
        countWhere(
            "SELECT (SELECT COUNT(*) FROM records WHERE run_id = ?1)"
                + " + (SELECT COUNT(*) FROM run_records WHERE run_id = ?1)",
            "run-broken"));
    assertEquals(0, countWhere("SELECT COUNT(*) FROM journal WHERE run_id = ?", "run-broken"));
  }

  private void sql(String statement, Object... args) throws Exception {
    try (Connection c = raw();
        PreparedStatement st = c.prepareStatement(statement)) {
      for (int i = 0; i < args.length; i++) {
        st.setObject(i + 1, args[i]);
      }
      assertTrue(st.executeUpdate() > 0, "changed nothing: " + statement);
    }
  }

  private List<StoreDamage> tamperAndReopen(String statement, Object... args) throws Exception {
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), key)) {
      store.append(simple("run-good", 1_000));
      store.append(simple("run-bad", 2_000));
      store.append(simple("run-last", 3_000));
      assertEquals(List.of(), store.verifyAll());
    }
    sql(statement, args);
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), key)) {
      return store.verifyAll();
    }
  }

  @Test
  void verifyAllReportsATamperedSegmentAndKeepsTheRun() throws Exception {
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), key)) {
      store.append(simple("run-good", 1_000));
      store.append(simple("run-bad", 2_000));
    }
    sql(
        "UPDATE run_records SET envelope = record_bytes(replace(record_text(envelope),"
            + " '\"at_ms\":2000', '\"at_ms\":2001'))"
            + " WHERE run_id = 'run-bad' AND kind = 'segment'");
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), key)) {
      List<StoreDamage> bad = store.verifyAll();
      assertEquals(List.of("run-bad"), bad.stream().map(StoreDamage::runId).toList());
      assertTrue(bad.get(0).reason().contains("address mismatch"), bad.toString());
      // Reported, never dropped; listed as tampered, never with its stored values.
      assertEquals(2, store.count());
      RunSummary s = store.run("run-bad").orElseThrow();
      assertTrue(s.tampered().isPresent());
      assertEquals("", s.outcomeJson());
      assertEquals("", s.log());
      assertThrows(TamperedRunException.class, () -> store.records("run-bad", RecordKind.SEGMENT));
      assertEquals(Optional.empty(), store.run("run-good").orElseThrow().tampered());
    }
    // Another node's key: every run and the head fail.
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), SigningKey.generate())) {
      List<StoreDamage> foreign = store.verifyAll();
      assertEquals(3, foreign.size(), foreign.toString());
      assertTrue(foreign.get(0).reason().contains("expected signer"), foreign.toString());
    }
  }

  @Test
  void aRewrittenOutcomeColumnIsNamedAndNeverShown() throws Exception {
    List<StoreDamage> bad =
        tamperAndReopen("UPDATE runs SET outcome = '\"Failed\"' WHERE run_id = 'run-bad'");
    assertEquals(List.of(new StoreDamage("run-bad", "outcome", bad.get(0).reason())), bad);
  }

  @Test
  void aRewrittenLogIsDetected() throws Exception {
    List<StoreDamage> bad =
        tamperAndReopen("UPDATE runs SET log = 'all good' WHERE run_id = 'run-bad'");
    assertEquals(
        List.of("run-bad/log"), bad.stream().map(d -> d.runId() + "/" + d.column()).toList());
  }

  @Test
  void aLiveRewriteIsCaughtOnRead() throws Exception {
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), key)) {
      store.append(simple("run-1", 1_000));
      assertEquals(List.of(), store.verifyAll());
      sql("UPDATE runs SET log = 'rewritten' WHERE run_id = 'run-1'");
      RunSummary s = store.list(10).get(0);
      assertTrue(s.tampered().orElseThrow().contains("log"), s.toString());
      assertEquals("", s.log());
      assertThrows(TamperedRunException.class, () -> store.submission("run-1"));
    }
  }

  @Test
  void aDeletedRunIsDetectedWhereverItWasDeletedFrom() throws Exception {
    String[][] deletions = {
      {"DELETE FROM runs WHERE run_id = 'run-bad'"},
      {
        "DELETE FROM runs WHERE run_id = 'run-last'", "DELETE FROM ledger WHERE run_id = 'run-last'"
      },
      {
        "DELETE FROM runs WHERE run_id = 'run-bad'",
        "DELETE FROM ledger WHERE run_id = 'run-bad'",
        "DELETE FROM run_records WHERE run_id = 'run-bad'"
      },
    };
    for (String[] deletion : deletions) {
      Files.deleteIfExists(tmp.resolve("runs.db"));
      Files.deleteIfExists(tmp.resolve("runs.db-wal"));
      Files.deleteIfExists(tmp.resolve("runs.db-shm"));
      List<StoreDamage> bad = tamperAndReopen(deletion[0]);
      for (int i = 1; i < deletion.length; i++) {
        sql(deletion[i]);
      }
      try (RunStore store = RunStore.open(tmp.resolve("runs.db"), key)) {
        bad = store.verifyAll();
      }
      assertTrue(
          bad.stream().anyMatch(d -> d.column().equals("runs") || d.column().equals("ledger")),
          List.of(deletion) + " -> " + bad);
    }
  }

  @Test
  void aSwappedReceiptOrJournalIsDetected() throws Exception {
    List<StoreDamage> receipt =
        tamperAndReopen(
            "UPDATE run_records SET envelope = (SELECT envelope FROM run_records WHERE run_id = 'run-good'"
                + " AND kind = 'receipt'), address = (SELECT address FROM run_records WHERE run_id ="
                + " 'run-good' AND kind = 'receipt') WHERE run_id = 'run-bad' AND kind = 'receipt'");
    assertEquals(List.of("run-bad"), receipt.stream().map(StoreDamage::runId).toList());
    Files.delete(tmp.resolve("runs.db"));
    Files.deleteIfExists(tmp.resolve("runs.db-wal"));
    Files.deleteIfExists(tmp.resolve("runs.db-shm"));
    List<StoreDamage> journal =
        tamperAndReopen(
            "UPDATE journal SET entry = '{\"n\":3}' WHERE run_id = 'run-bad' AND seq = 1");
    assertEquals(
        List.of("run-bad/journal"),
        journal.stream().map(d -> d.runId() + "/" + d.column()).toList());
  }

  @Test
  void storeFileIsPrivateAndUsesWalWithFullSync() throws Exception {
    Path file = tmp.resolve("state/runs.db");
    try (RunStore store = RunStore.open(file, key)) {
      store.append(simple("run-1", 1_000));
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
      // SQLite gives the WAL the database file's mode.
      Path wal = tmp.resolve("state/runs.db-wal");
      assertTrue(Files.exists(wal));
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(wal)));
      assertEquals("wal", store.pragma("journal_mode"));
      assertEquals("2", store.pragma("synchronous"), "synchronous=FULL");
      // Savepoint journals stay in memory: none is a temporary file opened per run.
      assertEquals("2", store.pragma("temp_store"), "temp_store=MEMORY");
      assertEquals(String.valueOf(RunStore.PAGE_BYTES), store.pragma("page_size"));
      assertEquals(file, store.file());
    }
  }
}
