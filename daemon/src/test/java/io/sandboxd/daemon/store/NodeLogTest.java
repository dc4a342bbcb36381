package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.LogCheckpoint;
import io.sandboxd.attest.MerkleHash;
import io.sandboxd.attest.MerkleTree;
import io.sandboxd.attest.MerkleVerifier;
import io.sandboxd.attest.SigningKey;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The node log inside the run store: leaves with their records, proofs, checkpoints, upgrade. */
class NodeLogTest {
  @TempDir Path tmp;

  private final SigningKey key = SigningKey.fromSeed(new byte[32]);
  private static final String ORIGIN = "sandboxd/test-node";
  private static final MerkleVerifier V = MerkleVerifier.blake3();

  private Path db() {
    return tmp.resolve("runs.db");
  }

  private RunStore open() {
    RunStore s = RunStore.open(db(), key);
    s.configureLog(ORIGIN, 1_000_000, 3_600_000, true);
    return s;
  }

  private static List<String> addresses(RunRecord r) {
    return List.of(r.segment().address(), r.receipt().address(), r.attestation().address());
  }

  private List<String> leaves() throws Exception {
    return rows(
        "SELECT CASE typeof(address) WHEN 'blob' THEN lower(hex(address)) ELSE address END"
            + " FROM node_log ORDER BY idx");
  }

  private long storedCheckpoints() throws Exception {
    return Long.parseLong(rows("SELECT COUNT(*) FROM node_log_checkpoints").get(0));
  }

  /** The leaves after storing {@code n} runs in a fresh store (then closed). */
  private List<String> storedRuns(int n) throws Exception {
    try (RunStore s = open()) {
      for (int i = 0; i < n; i++) {
        s.append(TestRuns.simple(key, "run-" + i, i));
      }
      return leaves();
    }
  }

  /**
   * The leaves after storing {@code n} runs in a fresh store (then closed) and taking its file back
   * to schema {@code version} by {@code statements}, as a store left by that version for the next
   * open to upgrade.
   */
  private List<String> storedRunsBackAt(int n, int version, String... statements) throws Exception {
    List<String> leaves = storedRuns(n);
    execute(statements);
    execute("PRAGMA user_version = " + version);
    return leaves;
  }

  /** Runs {@code statements} on the store's file behind its back, in order. */
  private void execute(String... statements) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db());
        Statement st = c.createStatement()) {
      for (String sql : statements) {
        st.execute(sql);
      }
    }
  }

  private void checkInclusion(RunStore s, String address) {
    RunStore.LogInclusion p = s.proveInLog(address);
    LogCheckpoint cp = LogCheckpoint.verify(p.note(), key.publicKey(), Optional.of(ORIGIN));
    assertTrue(
        V.verifyInclusion(
                p.proof(), MerkleHash.blake3().leaf(Hex.decode(address, 32, "a")), cp.head())
            .isValid(),
        address);
  }

  @Test
  void everyRecordOfARunIsALeafInStoreOrderAndProvesAgainstASignedCheckpoint() throws Exception {
    List<RunRecord> runs = new ArrayList<>();
    try (RunStore s = open()) {
      for (int i = 0; i < 5; i++) {
        RunRecord r = TestRuns.simple(key, "run-" + i, 10 + i);
        s.append(r);
        runs.add(r);
      }
      List<String> leaves = leaves();
      // The store record is chained under the batch's signed head, not signed itself: no leaf.
      assertEquals(15, leaves.size(), "segment, receipt and attestation per run");
      for (int i = 0; i < 5; i++) {
        assertEquals(addresses(runs.get(i)), leaves.subList(3 * i, 3 * i + 3));
      }
      assertEquals(15, s.logSize());
      RunStore.LogNote note = s.logCheckpoint();
      LogCheckpoint cp = LogCheckpoint.verify(note.note(), key.publicKey(), Optional.of(ORIGIN));
      List<byte[]> raw = leaves.stream().map(a -> Hex.decode(a, 32, "a")).toList();
      assertEquals(MerkleTree.blake3(raw).head(), cp.head(), "checkpoint = RFC 9162 BLAKE3 root");
      for (String a : leaves) {
        checkInclusion(s, a);
      }
      for (long m = 1; m <= 15; m++) {
        for (long n = m; n <= 15; n++) {
          RunStore.LogConsistency c = s.logConsistency(m, n);
          LogCheckpoint o = LogCheckpoint.verify(c.oldNote(), key.publicKey(), Optional.of(ORIGIN));
          LogCheckpoint w = LogCheckpoint.verify(c.newNote(), key.publicKey(), Optional.of(ORIGIN));
          assertEquals(m, o.treeSize());
          assertTrue(V.verifyConsistency(c.proof(), o.head(), w.head()).isValid(), m + "->" + n);
        }
      }
    }
  }

  @Test
  void theLogSurvivesReopeningAndGrowsConsistently() throws Exception {
    LogCheckpoint first;
    try (RunStore s = open()) {
      for (int i = 0; i < 3; i++) {
        s.append(TestRuns.simple(key, "run-" + i, i));
      }
      first = LogCheckpoint.verify(s.logCheckpoint().note(), key.publicKey(), Optional.empty());
    }
    try (RunStore s = open()) {
      assertEquals(first.treeSize(), s.logSize());
      RunRecord later = TestRuns.simple(key, "run-later", 99);
      s.append(later);
      checkInclusion(s, later.receipt().address());
      RunStore.LogConsistency c = s.logConsistency(first.treeSize(), s.logSize());
      LogCheckpoint now = LogCheckpoint.verify(c.newNote(), key.publicKey(), Optional.empty());
      assertTrue(V.verifyConsistency(c.proof(), first.head(), now.head()).isValid());
    }
  }

  @Test
  void aRunThatIsNotStoredLeavesNoLeaf() throws Exception {
    try (RunStore s = open()) {
      s.append(TestRuns.simple(key, "run-dup", 1));
      long size = s.logSize();
      assertThrows(StoreException.class, () -> s.append(TestRuns.simple(key, "run-dup", 2)));
      assertEquals(size, s.logSize());
      assertEquals(size, leaves().size());
      RunRecord next = TestRuns.simple(key, "run-next", 3);
      s.append(next);
      checkInclusion(s, next.attestation().address());
      LogCheckpoint cp =
          LogCheckpoint.verify(s.logCheckpoint().note(), key.publicKey(), Optional.empty());
      List<byte[]> raw = leaves().stream().map(a -> Hex.decode(a, 32, "a")).toList();
      assertEquals(MerkleTree.blake3(raw).head(), cp.head());
    }
  }

  @Test
  void checkpointsAreSignedEveryNRecordsWithTheRecords() throws Exception {
    try (RunStore s = open()) {
      s.configureLog(ORIGIN, 8, 3_600_000, true);
      for (int i = 0; i < 8; i++) {
        s.append(TestRuns.simple(key, "run-" + i, i));
      }
      // 24 leaves (3 a run), a checkpoint due after every 8 new ones, checked at each commit.
      assertEquals(3, storedCheckpoints());
    }
  }

  @Test
  void anUpgradedStoreLogsTheRecordsItAlreadyHolds() throws Exception {
    // Back to the schema before the log: drop its tables and step the version back.
    // 9: the version before migration 10 added the log (later migrations run again, idempotent).
    // Its records go back to the table they were kept in then (schema 23 moved them).
    List<String> before =
        storedRunsBackAt(
            4,
            9,
            "DROP TABLE node_log",
            "DROP TABLE node_log_subtrees",
            "DROP TABLE node_log_checkpoints",
            "INSERT INTO records (address, run_id, kind, seq, envelope)"
                + " SELECT address, run_id, kind, seq, envelope FROM run_records ORDER BY id",
            "DROP TABLE run_records",
            "ALTER TABLE runs DROP COLUMN records_at",
            "ALTER TABLE runs DROP COLUMN records_n");
    try (RunStore s = open()) {
      assertEquals(before, leaves());
      checkInclusion(s, before.get(before.size() - 1));
    }
  }

  @Test
  void badQueriesAreRefusedNamingTheFault() {
    try (RunStore s = open()) {
      s.append(TestRuns.simple(key, "run-1", 1));
      assertTrue(
          assertThrows(LogInputException.class, () -> s.proveInLog("ZZ"))
              .getMessage()
              .contains("64 lowercase hex"));
      assertThrows(LogNotFoundException.class, () -> s.proveInLog(Blake3.hex(new byte[] {1})));
      for (long[] bad : new long[][] {{0, 2}, {3, 2}, {1, 5}}) {
        assertTrue(
            assertThrows(LogInputException.class, () -> s.logConsistency(bad[0], bad[1]))
                .getMessage()
                .contains("SIZE1"));
      }
    }
  }

  @Test
  void subtreeHashesKeptByLevelBeforeMigration16AreReKeyedAndStillProve() throws Exception {
    // Back to the version-15 shape: the same hashes in node_log_nodes, keyed (level, idx).
    List<String> before =
        storedRunsBackAt(
            7,
            15,
            "CREATE TABLE node_log_nodes (level INTEGER NOT NULL, idx INTEGER NOT NULL,"
                + " hash BLOB NOT NULL, PRIMARY KEY (level, idx)) WITHOUT ROWID",
            "INSERT INTO node_log_nodes (level, idx, hash) SELECT pos & 63,"
                + " (((pos >> 6) + 1) >> (pos & 63)) - 1, hash FROM node_log_subtrees",
            "DROP TABLE node_log_subtrees");
    try (RunStore s = open()) {
      assertEquals(before, leaves());
      for (String address : before) {
        checkInclusion(s, address);
      }
      // Appends after the move keep proving, old leaves and new.
      s.append(TestRuns.simple(key, "run-7", 7));
      checkInclusion(s, before.get(0));
      List<String> after = leaves();
      checkInclusion(s, after.get(after.size() - 1));
    }
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db())) {
      assertTrue(!StoreSchema.hasTable(c, "node_log_nodes"), "old table dropped");
    }
  }

  /** The results of {@code sql} over the store's file, each row's columns joined by '|'. */
  /**
   * The node log has one lookup index, by prefix, and no other: the leaves logged once are found in
   * their group, not through an index that every commit writes at random.
   */
  private void assertLogIndexes() throws Exception {
    assertEquals(
        List.of("node_log_by_prefix"),
        rows(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'node_log'"
                + " ORDER BY name"));
  }

  private List<String> rows(String sql) throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db());
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      int n = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        StringBuilder row = new StringBuilder();
        for (int i = 1; i <= n; i++) {
          row.append(i > 1 ? "|" : "").append(rs.getString(i));
        }
        out.add(row.toString());
      }
    }
    return out;
  }

  @Test
  void leavesKeepTheirAddressAsBytesFoundThroughTheirIndexes() throws Exception {
    String manifest = Blake3.hex(new byte[] {7});
    try (RunStore s = open()) {
      for (int i = 0; i < 3; i++) {
        s.append(TestRuns.simple(key, "run-" + i, i));
      }
      s.appendToLog(NodeLog.MANIFEST, List.of(manifest));
      for (String a : leaves()) {
        checkInclusion(s, a);
      }
    }
    assertEquals(
        List.of("blob|32"), rows("SELECT DISTINCT typeof(address), length(address) FROM node_log"));
    assertLogIndexes();
    // A run's leaves are in their bucket; the manifest, looked up before it is logged, is not.
    assertEquals(
        List.of("segment|0", "receipt|0", "attestation|0", "manifest|null"),
        rows("SELECT kind, coalesce(bucket, 'null') FROM node_log ORDER BY idx").subList(6, 10));
    // A lookup probes an index, never a scan of every leaf.
    String logged =
        plan(
            "SELECT idx, kind FROM node_log WHERE bucket IS NULL AND substr(address, 1, 8)"
                + " IN (x'0102030405060708', '01020304') AND address IN (x'01', '01')"
                + " ORDER BY idx LIMIT 1");
    assertTrue(logged.contains("USING INDEX node_log_by_prefix"), logged);
    // A leaf of the open group is read by its position, once memory has matched its prefix.
    String once = plan("SELECT kind FROM node_log WHERE idx = 7 AND address = x'01'");
    assertTrue(once.contains("USING INTEGER PRIMARY KEY"), once);
  }

  private String plan(String query) throws Exception {
    return String.join("\n", rows("EXPLAIN QUERY PLAN " + query));
  }

  @Test
  void leavesInManyBucketsProveAndAnAbsentAddressIsNotFound() throws Exception {
    // 100 runs: 300 leaves over buckets 0 and 1, then manifests between runs.
    List<String> all;
    String manifest = Blake3.hex(new byte[] {9});
    try (RunStore s = open()) {
      for (int i = 0; i < 100; i++) {
        s.append(TestRuns.simple(key, "run-" + i, i));
        if (i == 90) {
          s.appendToLog(NodeLog.MANIFEST, List.of(manifest));
        }
      }
      s.appendToLog(NodeLog.MANIFEST, List.of(manifest));
      all = leaves();
      assertEquals(301, all.size(), "three leaves a run, the manifest once");
      for (String a : all) {
        checkInclusion(s, a);
      }
      assertEquals(
          List.of("0|256", "1|44", "null|1"),
          rows(
              "SELECT coalesce(bucket, 'null'), count(*) FROM node_log GROUP BY bucket"
                  + " ORDER BY bucket IS NULL, bucket"));
      LogNotFoundException e =
          assertThrows(
              LogNotFoundException.class, () -> s.proveInLog(Blake3.hex(new byte[] {1, 2})));
      assertTrue(e.getMessage().contains("not in the node log"), e.getMessage());
    }
  }

  @Test
  void subtreesBelowLevel4AreRecomputedFromLeavesAtEverySize() throws Exception {
    List<String> all = new ArrayList<>();
    try (RunStore s = open()) {
      for (int i = 0; i < 43; i++) {
        s.append(TestRuns.simple(key, "run-" + i, i));
      }
      all = leaves();
      assertEquals(129, all.size());
    }
    // Seven of every eight subtrees are not kept: only levels 4 and up have rows.
    assertEquals(
        List.of("4|8", "5|4", "6|2", "7|1"),
        rows("SELECT pos & 63, count(*) FROM node_log_subtrees GROUP BY 1 ORDER BY 1"));
    List<byte[]> raw = all.stream().map(a -> Hex.decode(a, 32, "a")).toList();
    // Reopened at 129 = 128 + 1 leaves, then grown to sizes whose frontier has every low level.
    try (RunStore s = open()) {
      for (String a : all) {
        checkInclusion(s, a);
      }
      for (int i = 43; i < 48; i++) {
        RunRecord r = TestRuns.simple(key, "run-" + i, i);
        s.append(r);
        all.addAll(addresses(r));
      }
      raw = all.stream().map(a -> Hex.decode(a, 32, "a")).toList();
      LogCheckpoint cp =
          LogCheckpoint.verify(s.logCheckpoint().note(), key.publicKey(), Optional.empty());
      assertEquals(MerkleTree.blake3(raw).head(), cp.head());
      for (long m : new long[] {1, 3, 7, 15, 16, 17, 31, 100, 129, 143}) {
        for (long n : new long[] {m, 143, 144}) {
          if (n < m) {
            continue;
          }
          RunStore.LogConsistency c = s.logConsistency(m, n);
          LogCheckpoint o = LogCheckpoint.verify(c.oldNote(), key.publicKey(), Optional.empty());
          LogCheckpoint w = LogCheckpoint.verify(c.newNote(), key.publicKey(), Optional.empty());
          assertEquals(MerkleTree.blake3(raw.subList(0, (int) m)).head(), o.head(), "size " + m);
          assertTrue(V.verifyConsistency(c.proof(), o.head(), w.head()).isValid(), m + "->" + n);
        }
      }
    }
  }

  @Test
  void hexLeavesFromBeforeMigration18StillProveBesideNewByteLeaves() throws Exception {
    // Back to version 17: every leaf as 64 hex characters, indexed whole.
    List<String> before =
        storedRunsBackAt(
            5,
            17,
            "DROP INDEX node_log_by_prefix",
            "DROP INDEX IF EXISTS node_log_by_bucket",
            "UPDATE node_log SET address = lower(hex(address)), bucket = NULL",
            NodeLog.V10_DDL.get(1));
    String manifest = Blake3.hex(new byte[] {42});
    try (RunStore s = open()) {
      assertEquals(before, leaves());
      for (String a : before) {
        checkInclusion(s, a);
      }
      // An address logged before as hex is found, so it is not logged twice.
      s.appendToLog(NodeLog.MANIFEST, List.of(before.get(2), manifest));
      s.appendToLog(NodeLog.MANIFEST, List.of(manifest));
      RunRecord later = TestRuns.simple(key, "run-later", 9);
      s.append(later);
      List<String> after = leaves();
      assertEquals(before.size() + 4, after.size(), "one manifest leaf, then three of the run");
      assertEquals(before, after.subList(0, before.size()));
      for (String a : after) {
        checkInclusion(s, a);
      }
      LogCheckpoint cp =
          LogCheckpoint.verify(s.logCheckpoint().note(), key.publicKey(), Optional.empty());
      List<byte[]> raw = after.stream().map(a -> Hex.decode(a, 32, "a")).toList();
      assertEquals(MerkleTree.blake3(raw).head(), cp.head(), "one tree over both forms");
    }
    assertEquals(
        List.of("text|" + before.size(), "blob|4"),
        rows("SELECT typeof(address), count(*) FROM node_log GROUP BY 1 ORDER BY min(idx)"));
    assertLogIndexes();
    // The hex leaves and the manifest are found by prefix, the later run's leaves by bucket.
    assertEquals(
        List.of("null|" + (before.size() + 1), "0|3"),
        rows(
            "SELECT coalesce(bucket, 'null'), count(*) FROM node_log GROUP BY bucket"
                + " ORDER BY bucket IS NOT NULL"));
  }

  /** Stores runs {@code from} to {@code to - 1} ("run-i", created at i), 500 a transaction. */
  private void appendRuns(RunStore s, int from, int to) {
    List<RunRecord> batch = new ArrayList<>();
    for (int i = from; i < to; i++) {
      batch.add(TestRuns.simple(key, "run-" + i, i));
      if (batch.size() == 500 || i == to - 1) {
        s.appendAll(batch);
        batch.clear();
      }
    }
  }

  @Test
  void aCompleteGroupIsCopiedInPrefixOrderAndItsLeavesStillProve() throws Exception {
    int group = 1 << NodeLog.GROUP_BITS;
    // Enough runs for one complete group and part of the next, with a manifest inside the first.
    int runs = group / 3 + 200;
    String manifest = Blake3.hex(new byte[] {5});
    List<String> all;
    try (RunStore s = open()) {
      appendRuns(s, 0, 1000);
      s.appendToLog(NodeLog.MANIFEST, List.of(manifest));
      appendRuns(s, 1000, runs);
      all = leaves();
      assertEquals(3 * runs + 1, all.size());
      // The group holds its bucketed leaves only (not the manifest), sorted by prefix.
      assertEquals(
          List.of("0|" + (group - 1)),
          rows("SELECT grp, count(*) FROM node_log_groups GROUP BY 1"));
      List<String> order = rows("SELECT hex(prefix) || '|' || idx FROM node_log_groups");
      List<String> sorted = new ArrayList<>(order);
      sorted.sort(null);
      assertEquals(sorted, order, "the group's entries are in prefix order");
      // Leaves on both sides of the group's end, the manifest, and a sample of the rest prove.
      int logged = all.indexOf(manifest);
      assertTrue(logged > 0 && logged < group, "the manifest is in the first group: " + logged);
      java.util.Random random = new java.util.Random(19);
      List<Integer> probe = new ArrayList<>(List.of(0, 1, logged, group - 2, group - 1, group));
      probe.add(all.size() - 1);
      for (int i = 0; i < 40; i++) {
        probe.add(random.nextInt(all.size()));
      }
      for (int i : probe) {
        checkInclusion(s, all.get(i));
        assertEquals(i, s.proveInLog(all.get(i)).proof().leafIndex(), "leaf " + i);
      }
      assertThrows(LogNotFoundException.class, () -> s.proveInLog(Blake3.hex(new byte[] {6})));
    }
    // Reopened, the open group is read back from the store: its leaves and the group's still prove.
    try (RunStore s = open()) {
      for (int i : List.of(group - 1, group, group + 1, all.size() - 2, all.size() - 1, 5)) {
        assertEquals(i, s.proveInLog(all.get(i)).proof().leafIndex(), "leaf " + i);
      }
    }
  }

  @Test
  void aRolledBackBatchThatBeganAGroupLeavesTheOpenGroupFindable() throws Exception {
    int group = 1 << NodeLog.GROUP_BITS;
    // Three leaves a run: one leaf short of a complete group.
    int runs = (group - 1) / 3;
    List<String> all;
    try (RunStore s = open()) {
      appendRuns(s, 0, runs);
      all = leaves();
      assertEquals(group - 1, all.size());
      // A batch whose first run completes the group and begins the next, then fails (its second
      // run is stored already): all of it is rolled back.
      List<RunRecord> failing =
          List.of(TestRuns.simple(key, "run-new", runs), TestRuns.simple(key, "run-0", 0));
      assertThrows(StoreException.class, () -> s.appendAll(failing));
      assertEquals(all, leaves());
      assertEquals(List.of(), rows("SELECT grp FROM node_log_groups"));
      for (int i : List.of(0, 1, group / 2, group - 3, group - 2)) {
        assertEquals(i, s.proveInLog(all.get(i)).proof().leafIndex(), "leaf " + i);
      }
      // The log goes on from where it was: the group completes and its leaves still prove.
      s.append(TestRuns.simple(key, "run-new", runs));
      List<String> after = leaves();
      assertEquals(group + 2, after.size());
      for (int i : List.of(3, group - 2, group - 1, group, group + 1)) {
        assertEquals(i, s.proveInLog(after.get(i)).proof().leafIndex(), "leaf " + i);
      }
    }
  }

  @Test
  void leavesLoggedBeforeMigration19AreFoundByPrefixBesideBucketedOnes() throws Exception {
    // Back to version 18: no bucket column, every leaf in the prefix index.
    List<String> before =
        storedRunsBackAt(
            4,
            18,
            "DROP INDEX IF EXISTS node_log_by_bucket",
            "DROP INDEX node_log_by_prefix",
            "ALTER TABLE node_log DROP COLUMN bucket",
            NodeLog.COMPACT_DDL.get(1));
    try (RunStore s = open()) {
      assertEquals(String.valueOf(StoreSchema.LATEST), s.pragma("user_version"));
      s.append(TestRuns.simple(key, "run-later", 9));
      // Logged before as a leaf of the prefix index: not logged again.
      s.appendToLog(NodeLog.MANIFEST, List.of(before.get(5)));
      List<String> after = leaves();
      assertEquals(before.size() + 3, after.size());
      assertEquals(before, after.subList(0, before.size()));
      for (String a : after) {
        checkInclusion(s, a);
      }
    }
    assertEquals(
        List.of("null|" + before.size(), "0|3"),
        rows(
            "SELECT coalesce(bucket, 'null'), count(*) FROM node_log GROUP BY bucket"
                + " ORDER BY bucket IS NOT NULL"));
  }

  @Test
  void aDamagedLeafAddressIsAStoreErrorNamingTheLeaf() throws Exception {
    try (RunStore s = open()) {
      for (int i = 0; i < 2; i++) {
        s.append(TestRuns.simple(key, "run-" + i, i));
      }
      String second = leaves().get(1);
      for (String damage : List.of("x'0102'", "'not hex at all'")) {
        execute("UPDATE node_log SET address = " + damage + " WHERE idx = 0");
        // Leaf 1's proof starts from its sibling, leaf 0.
        StoreException e = assertThrows(StoreException.class, () -> s.proveInLog(second));
        assertTrue(e.getMessage().contains("leaf 0"), e.getMessage());
      }
    }
  }

  @Test
  void subtreeKeysGrowInTheOrderAppendsCompleteTheSubtrees() {
    // Appending leaf n completes the subtrees whose last leaf is n, smallest level first.
    long last = -1;
    for (long n = 0; n < 4096; n++) {
      for (int level = 1; level < 13 && ((n + 1) % (1L << level)) == 0; level++) {
        long key = NodeLog.subtreeKey(level, (n + 1) / (1L << level) - 1);
        assertTrue(key > last, "subtree " + level + " ending at leaf " + n);
        last = key;
      }
    }
  }
}
