package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.StoreHead;
import io.sandboxd.attest.StoredRun;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Each schema migration, applied to a database written by the version before it. */
class StoreMigrationTest extends StoreFileFixture {

  /** The DDL the version-1 releases ran, verbatim (they never set user_version). */
  private static final List<String> RELEASED_V1_DDL =
      List.of(
          "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, created_ms INTEGER NOT NULL,"
              + " unit TEXT NOT NULL, grants_id TEXT NOT NULL, outcome TEXT NOT NULL,"
              + " log TEXT NOT NULL, grants TEXT NOT NULL DEFAULT '',"
              + " entry TEXT NOT NULL DEFAULT '')",
          "CREATE TABLE IF NOT EXISTS records (address TEXT NOT NULL, run_id TEXT NOT NULL,"
              + " kind TEXT NOT NULL, seq INTEGER NOT NULL, envelope TEXT NOT NULL,"
              + " PRIMARY KEY (run_id, kind, seq))",
          "CREATE TABLE IF NOT EXISTS journal (run_id TEXT NOT NULL, seq INTEGER NOT NULL,"
              + " entry TEXT NOT NULL, PRIMARY KEY (run_id, seq))",
          "CREATE TABLE IF NOT EXISTS blobs (address TEXT PRIMARY KEY, bytes BLOB NOT NULL)",
          "CREATE TABLE IF NOT EXISTS modules (address TEXT PRIMARY KEY, bytes BLOB NOT NULL)",
          "CREATE INDEX IF NOT EXISTS runs_by_time ON runs (created_ms)");

  /** Writes the runs as the version-1 release did: no ledger, no head, no user_version. */
  private List<RunRecord> writeV1(boolean withGrantsColumns, String... runIds) throws Exception {
    List<RunRecord> runs = new ArrayList<>();
    try (Connection c = raw();
        Statement st = c.createStatement()) {
      for (String ddl : RELEASED_V1_DDL) {
        st.execute(
            withGrantsColumns
                ? ddl
                : ddl.replace(
                    ", grants TEXT NOT NULL DEFAULT '', entry TEXT NOT NULL DEFAULT ''", ""));
      }
      for (int i = 0; i < runIds.length; i++) {
        RunRecord r = TestRuns.simple(key, runIds[i], 1_000L * (i + 1));
        runs.add(r);
        if (withGrantsColumns) {
          insert(
              c,
              "INSERT INTO runs (run_id, created_ms, unit, grants_id, outcome, log, grants, entry)"
                  + " VALUES (?,?,?,?,?,?,?,?)",
              r.runId(),
              r.createdMs(),
              r.unit(),
              r.grantsId(),
              r.outcomeJson(),
              r.log(),
              r.grantsJson(),
              r.entry());
        } else {
          insert(
              c,
              "INSERT INTO runs (run_id, created_ms, unit, grants_id, outcome, log)"
                  + " VALUES (?,?,?,?,?,?)",
              r.runId(),
              r.createdMs(),
              r.unit(),
              r.grantsId(),
              r.outcomeJson(),
              r.log());
        }
        long seq = r.segment().core().get("seq").longValue();
        for (RecordKind kind : RecordKind.values()) {
          Envelope env =
              switch (kind) {
                case SEGMENT -> r.segment();
                case RECEIPT -> r.receipt();
                case ATTESTATION -> r.attestation();
              };
          insert(
              c,
              "INSERT INTO records (address, run_id, kind, seq, envelope) VALUES (?,?,?,?,?)",
              env.address(),
              r.runId(),
              kind.stored(),
              seq,
              env.toJsonLine());
        }
        for (int j = 0; j < r.journalEntries().size(); j++) {
          insert(
              c,
              "INSERT INTO journal (run_id, seq, entry) VALUES (?,?,?)",
              r.runId(),
              j,
              r.journalEntries().get(j));
        }
        for (Map.Entry<String, byte[]> b : r.blobs().entrySet()) {
          insert(
              c,
              "INSERT OR IGNORE INTO blobs (address, bytes) VALUES (?,?)",
              b.getKey(),
              b.getValue());
        }
        insert(
            c, "INSERT OR IGNORE INTO modules (address, bytes) VALUES (?,?)", r.unit(), r.module());
      }
    }
    return runs;
  }

  private static void insert(Connection c, String sql, Object... args) throws Exception {
    try (PreparedStatement st = c.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        st.setObject(i + 1, args[i]);
      }
      assertTrue(st.executeUpdate() > 0, "changed nothing: " + sql);
    }
  }

  private long userVersion() throws Exception {
    try (Connection c = raw();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("PRAGMA user_version")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private boolean hasTable(String name) throws Exception {
    try (Connection c = raw()) {
      return StoreSchema.hasTable(c, name);
    }
  }

  /** SQLite's plan for {@code sql} with {@code args} bound, one step a line. */
  private String plan(String sql, Object... args) throws Exception {
    StringBuilder plan = new StringBuilder();
    try (Connection c = raw();
        PreparedStatement st = c.prepareStatement("EXPLAIN QUERY PLAN " + sql)) {
      for (int i = 0; i < args.length; i++) {
        st.setObject(i + 1, args[i]);
      }
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          plan.append(rs.getString("detail")).append('\n');
        }
      }
    }
    return plan.toString();
  }

  private long count(String table) throws Exception {
    try (Connection c = raw();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM " + table)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private List<String> ledgerRunIds() throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = raw();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT run_id, envelope FROM ledger ORDER BY position")) {
      while (rs.next()) {
        StoredRun s = StoreLedger.read(rs.getBytes(2)).stored();
        assertEquals(rs.getString(1), s.runId());
        out.add(s.runId());
      }
    }
    return out;
  }

  @Test
  void migrationsAreDenseFromOneAndAFreshStoreIsAtTheLatest() throws Exception {
    for (int i = 0; i < StoreSchema.MIGRATIONS.size(); i++) {
      assertEquals(i + 1, StoreSchema.MIGRATIONS.get(i).version());
    }
    assertEquals(StoreSchema.MIGRATIONS.size(), StoreSchema.LATEST);
    try (RunStore store = RunStore.open(file(), key)) {
      assertEquals(String.valueOf(StoreSchema.LATEST), store.pragma("user_version"));
      store.append(TestRuns.simple(key, "run-1", 1_000));
      assertEquals(List.of(), store.verifyAll());
    }
    for (String table :
        List.of(
            "runs",
            "records",
            "journal",
            "blobs",
            "modules",
            "pruned",
            "ledger",
            "store_head",
            "store_checkpoint")) {
      assertTrue(hasTable(table), table);
    }
  }

  @Test
  void aVersion1StoreIsVerifiedSignedAndServed() throws Exception {
    List<RunRecord> runs = writeV1(true, "run-b", "run-a", "run-c");
    assertEquals(0, userVersion());
    try (RunStore store = RunStore.open(file(), key)) {
      assertEquals(String.valueOf(StoreSchema.LATEST), store.pragma("user_version"));
      // Made with SQLite's default pages, it keeps them: only a new store gets PAGE_BYTES.
      assertEquals("4096", store.pragma("page_size"));
      assertEquals(List.of(), store.verifyAll());
      assertEquals(
          List.of("run-c", "run-a", "run-b"),
          store.list(10).stream().map(RunSummary::runId).toList());
      RunRecord a = runs.get(1);
      assertEquals(
          new RunSummary(
              "run-a",
              a.createdMs(),
              a.unit(),
              a.grantsId(),
              a.outcomeJson(),
              1,
              a.segment().address(),
              a.log(),
              Optional.empty()),
          store.run("run-a").orElseThrow());
      assertEquals(
          a.attestation().toJsonLine(),
          store.records("run-a", RecordKind.ATTESTATION).get(0).toJsonLine());
      RunStore.Submission sub = store.submission("run-a").orElseThrow();
      assertEquals(a.grantsJson(), sub.grantsJson());
      assertEquals(a.journalEntries(), sub.journal());
      assertTrue(store.headLine().contains("(3 runs"), store.headLine());
      // The upgraded store takes new runs on the same chain.
      store.append(TestRuns.simple(key, "run-d", 9_000));
      assertEquals(List.of(), store.verifyAll());
    }
    // Signed in created order, once: reopening migrates nothing.
    assertEquals(List.of("run-b", "run-a", "run-c", "run-d"), ledgerRunIds());
    try (RunStore store = RunStore.open(file(), key)) {
      assertEquals(List.of(), store.verifyAll());
      assertEquals(4, store.count());
    }
    assertEquals(List.of("run-b", "run-a", "run-c", "run-d"), ledgerRunIds());
  }

  @Test
  void aFirstReleaseStoreWithoutGrantsColumnsIsUpgraded() throws Exception {
    writeV1(false, "run-1", "run-2");
    try (RunStore store = RunStore.open(file(), key)) {
      assertEquals(String.valueOf(StoreSchema.LATEST), store.pragma("user_version"));
      assertEquals(List.of(), store.verifyAll());
      RunStore.Submission sub = store.submission("run-2").orElseThrow();
      assertEquals("", sub.grantsJson());
      assertEquals("", sub.entry());
    }
  }

  @Test
  void aTamperedVersion1RunFailsTheUpgradeAndChangesNothing() throws Exception {
    String[] tamperings = {
      "UPDATE runs SET outcome = '\"Failed\"' WHERE run_id = 'run-bad'",
      "UPDATE runs SET unit = (SELECT unit FROM runs WHERE run_id = 'run-good')"
          + " WHERE run_id = 'run-bad'",
      "UPDATE records SET envelope = replace(envelope, '\"at_ms\":2000', '\"at_ms\":2001')"
          + " WHERE run_id = 'run-bad' AND kind = 'segment'",
      "UPDATE records SET envelope = (SELECT envelope FROM records WHERE run_id = 'run-good'"
          + " AND kind = 'receipt'), address = (SELECT address FROM records WHERE run_id ="
          + " 'run-good' AND kind = 'receipt') WHERE run_id = 'run-bad' AND kind = 'receipt'",
      "DELETE FROM records WHERE run_id = 'run-bad' AND kind = 'attestation'",
      "UPDATE records SET kind = 'note' WHERE run_id = 'run-bad' AND kind = 'receipt'",
      "UPDATE journal SET entry = '{\"n\":3}' WHERE run_id = 'run-bad' AND seq = 1",
      "DELETE FROM journal WHERE run_id = 'run-bad' AND seq = 0",
    };
    for (String tampering : tamperings) {
      java.nio.file.Files.deleteIfExists(file());
      writeV1(true, "run-good", "run-bad", "run-last");
      sql(tampering);
      StoreException e =
          assertThrows(StoreException.class, () -> RunStore.open(file(), key), tampering);
      assertTrue(e.getMessage().contains("run run-bad"), tampering + " -> " + e.getMessage());
      assertTrue(e.getMessage().contains("version 1 to 2"), e.getMessage());
      assertEquals(0, userVersion(), tampering);
      assertFalse(hasTable("ledger"), "rolled back: " + tampering);
    }
  }

  @Test
  void aVersion1StoreSignedByAnotherKeyOrWithDamagedBlobsIsRefused() throws Exception {
    writeV1(true, "run-1");
    StoreException foreign =
        assertThrows(StoreException.class, () -> RunStore.open(file(), SigningKey.generate()));
    assertTrue(foreign.getMessage().contains("run run-1"), foreign.getMessage());
    assertEquals(0, userVersion());

    sql("UPDATE blobs SET bytes = X'00'");
    StoreException blob = assertThrows(StoreException.class, () -> RunStore.open(file(), key));
    assertTrue(blob.getMessage().contains("blobs"), blob.getMessage());
    assertFalse(hasTable("ledger"));
  }

  @Test
  void aStoreFromANewerSandboxdIsRefusedAndLeftAlone() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      store.append(TestRuns.simple(key, "run-1", 1_000));
    }
    try (Connection c = raw();
        Statement st = c.createStatement()) {
      st.execute("PRAGMA user_version = " + (StoreSchema.LATEST + 1));
    }
    StoreException e = assertThrows(StoreException.class, () -> RunStore.open(file(), key));
    assertTrue(e.getMessage().contains("newer sandboxd"), e.getMessage());
    assertTrue(e.getMessage().contains("version " + (StoreSchema.LATEST + 1)), e.getMessage());
    assertEquals(StoreSchema.LATEST + 1, userVersion());
  }

  @Test
  void aLedgerStoreFromBeforeVersioningIsRecognisedAsVersion2() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      store.append(TestRuns.simple(key, "run-1", 1_000));
    }
    String head;
    try (Connection c = raw();
        Statement st = c.createStatement()) {
      st.execute("PRAGMA user_version = 0");
      try (ResultSet rs = st.executeQuery("SELECT envelope FROM store_head")) {
        rs.next();
        head = rs.getString(1);
      }
    }
    try (RunStore store = RunStore.open(file(), key)) {
      assertEquals(String.valueOf(StoreSchema.LATEST), store.pragma("user_version"));
      assertEquals(List.of(), store.verifyAll());
    }
    assertEquals(List.of("run-1"), ledgerRunIds());
    try (Connection c = raw();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT envelope FROM store_head")) {
      rs.next();
      assertEquals(head, rs.getString(1), "not re-signed");
      assertEquals(
          1,
          StoreHead.fromCore(Envelope.fromJson(CanonicalJson.parse(rs.getString(1))).core())
              .runs());
    }
  }

  @Test
  void version20StoresClaimsApartAndStillReadsThoseStoredBefore() throws Exception {
    // Three evictions at the same millisecond: only their rowids keep them in stored order.
    List<Envelope> evictions = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      evictions.add(
          Envelope.sign(
              new io.sandboxd.attest.WarmpoolEvict(
                      "pool-a",
                      "instance-" + i,
                      1_000,
                      5_000,
                      io.sandboxd.attest.WarmpoolEvict.Reason.Ttl,
                      10 + i,
                      io.sandboxd.attest.Provenance.Estimator)
                  .toCore(),
              key));
    }
    Envelope claim;
    try (RunStore store = RunStore.open(file(), key)) {
      store.append(TestRuns.claimed(key, "run-1", 1_000));
      store.appendEvictions(evictions);
      store.append(TestRuns.simple(key, "run-2", 2_000));
      claim = store.claim("run-1").orElseThrow();
    }
    assertEquals(1, count("pool_claims"));
    assertEquals(3, count("pool_records"));
    // Back to the version-19 shape: the claim kept in pool_records, keyed by its address.
    try (Connection c = raw();
        Statement st = c.createStatement()) {
      st.execute(
          "INSERT INTO pool_records (address, kind, run_id, created_ms, envelope)"
              + " SELECT '"
              + claim.address()
              + "', 'claim', run_id, "
              + claim.core().get("claimed_ms").longValue()
              + ", envelope FROM pool_claims");
      st.execute("DROP TABLE pool_claims");
      st.execute("PRAGMA user_version = 19");
    }
    assertFalse(hasTable("pool_claims"));
    try (RunStore store = RunStore.open(file(), key)) {
      assertEquals(String.valueOf(StoreSchema.LATEST), store.pragma("user_version"));
      assertEquals(claim.toJsonLine(), store.claim("run-1").orElseThrow().toJsonLine());
      assertEquals(Optional.empty(), store.claim("run-2"));
      assertEquals(
          evictions.stream().map(Envelope::address).toList(),
          store.evictions(10).stream().map(Envelope::address).toList());
      store.append(TestRuns.claimed(key, "run-3", 3_000));
      assertEquals("run-3", store.claim("run-3").orElseThrow().core().get("run_id").textValue());
      assertEquals(List.of(), store.verifyAll());
    }
    // The new claim went to its own table; the one stored before stayed where it was.
    assertEquals(1, count("pool_claims"));
    assertEquals(4, count("pool_records"));
    String plan = plan(PoolRecordTable.CLAIM_OF_RUN, "run-1");
    assertTrue(plan.contains("pool_claims_by_run"), plan);
    assertTrue(plan.contains("pool_records_by_run"), plan);
  }

  @Test
  void version16MovesEachSubmitterIntoItsRunsRowAndDropsTheUnreadIndex() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      store.append(TestRuns.simple(key, "run-1", 1_000));
      store.append(TestRuns.simple(key, "run-2", 2_000));
    }
    // Back to the version-15 shape: submitters beside runs, records indexed by address.
    try (Connection c = raw();
        Statement st = c.createStatement()) {
      st.execute("CREATE TABLE submitters (run_id TEXT PRIMARY KEY, uid INTEGER NOT NULL)");
      st.execute("INSERT INTO submitters (run_id, uid) VALUES ('run-1', 1234)");
      st.execute("ALTER TABLE runs DROP COLUMN uid");
      st.execute("CREATE INDEX records_by_address ON records (address)");
      st.execute("PRAGMA user_version = 15");
    }
    try (RunStore store = RunStore.open(file(), key)) {
      assertEquals(String.valueOf(StoreSchema.LATEST), store.pragma("user_version"));
      assertEquals(java.util.OptionalLong.of(1234), store.submitter("run-1"));
      assertEquals(java.util.OptionalLong.empty(), store.submitter("run-2"));
      assertEquals(List.of(), store.verifyAll());
    }
    assertFalse(hasTable("submitters"));
    try (Connection c = raw();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT count(*) FROM sqlite_master WHERE name = 'records_by_address'")) {
      rs.next();
      assertEquals(0, rs.getInt(1));
    }
    // The eviction listing reads the partial index, not a scan of every claim.
    String plan = plan(PoolRecordTable.EVICTIONS, 10);
    assertTrue(plan.contains("pool_evictions_by_time"), plan);
    // Once more from a store stamped before versioning: the step finds nothing left to move.
    try (Connection c = raw();
        Statement st = c.createStatement()) {
      st.execute("PRAGMA user_version = 15");
    }
    try (RunStore store = RunStore.open(file(), key)) {
      assertEquals(java.util.OptionalLong.of(1234), store.submitter("run-1"));
    }
  }

  @Test
  void versions21And22DropTheLogsBucketIndexAndFindTheLedgerByEachRunsPosition() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      // Stored out of id order, so that a position is not an id's rank.
      store.append(TestRuns.simple(key, "run-b", 1_000));
      store.append(TestRuns.simple(key, "run-a", 2_000));
      store.append(TestRuns.simple(key, "run-c", 3_000));
    }
    // Back to the version-20 shape: the ledger indexed by run id, no position in runs, the node
    // log's open leaves indexed by bucket.
    try (Connection c = raw();
        Statement st = c.createStatement()) {
      st.execute(
          "CREATE TABLE ledger_v20 (position INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE,"
              + " envelope TEXT NOT NULL)");
      st.execute("INSERT INTO ledger_v20 SELECT position, run_id, envelope FROM ledger");
      st.execute("DROP TABLE ledger");
      st.execute("ALTER TABLE ledger_v20 RENAME TO ledger");
      st.execute("ALTER TABLE runs DROP COLUMN position");
      st.execute(
          "CREATE INDEX node_log_by_bucket ON node_log (bucket, substr(address, 1, 4))"
              + " WHERE bucket IS NOT NULL");
      st.execute("PRAGMA user_version = 20");
    }
    try (RunStore store = RunStore.open(file(), key)) {
      assertEquals(String.valueOf(StoreSchema.LATEST), store.pragma("user_version"));
      assertEquals(List.of(), store.verifyAll());
      for (String id : List.of("run-a", "run-b", "run-c")) {
        assertEquals(id, store.run(id).orElseThrow().runId());
      }
      assertEquals(3, store.list(10).size());
      store.append(TestRuns.simple(key, "run-d", 4_000));
      assertEquals("run-d", store.run("run-d").orElseThrow().runId());
      assertEquals(List.of(), store.verifyAll());
    }
    assertEquals(List.of("run-b", "run-a", "run-c", "run-d"), ledgerRunIds());
    List<String> positions = new ArrayList<>();
    List<String> indexes = new ArrayList<>();
    try (Connection c = raw();
        Statement st = c.createStatement()) {
      try (ResultSet rs = st.executeQuery("SELECT run_id, position FROM runs ORDER BY position")) {
        while (rs.next()) {
          positions.add(rs.getString(1) + "@" + rs.getLong(2));
        }
      }
      try (ResultSet rs =
          st.executeQuery(
              "SELECT name FROM sqlite_master WHERE type = 'index'"
                  + " AND (tbl_name = 'ledger' OR name = 'node_log_by_bucket')")) {
        while (rs.next()) {
          indexes.add(rs.getString(1));
        }
      }
    }
    assertEquals(List.of("run-b@0", "run-a@1", "run-c@2", "run-d@3"), positions);
    assertEquals(List.of(), indexes, "no index by run id on the ledger, none by bucket");
    // A run's store record is read by its position, not by a scan of the ledger.
    String plan =
        plan(
            "SELECT l.envelope FROM runs r JOIN ledger l ON l.position = r.position"
                + " AND l.run_id = r.run_id WHERE r.run_id = ?",
            "run-a");
    assertTrue(plan.contains("USING INTEGER PRIMARY KEY"), plan);
    assertFalse(plan.contains("SCAN"), plan);
  }
}
