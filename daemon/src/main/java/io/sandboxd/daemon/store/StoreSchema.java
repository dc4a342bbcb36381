package io.sandboxd.daemon.store;

import io.sandboxd.attest.SigningKey;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

/**
 * The run store's schema as an ordered list of migrations, tracked by {@code PRAGMA user_version}.
 * A new table or column is a new migration appended here, never an edit of an old one: a store is
 * only ever moved forward, one version per transaction.
 */
final class StoreSchema {
  private StoreSchema() {}

  /**
   * Version 1, frozen: the schema of the first releases (which never set {@code user_version}; the
   * {@code grants} and {@code entry} columns came in a later release of version 1, hence their
   * defaults).
   */
  static final List<String> V1_DDL =
      List.of(
          "CREATE TABLE runs (run_id TEXT PRIMARY KEY, created_ms INTEGER NOT NULL,"
              + " unit TEXT NOT NULL, grants_id TEXT NOT NULL, outcome TEXT NOT NULL,"
              + " log TEXT NOT NULL, grants TEXT NOT NULL DEFAULT '',"
              + " entry TEXT NOT NULL DEFAULT '')",
          "CREATE TABLE records (address TEXT NOT NULL, run_id TEXT NOT NULL,"
              + " kind TEXT NOT NULL, seq INTEGER NOT NULL, envelope TEXT NOT NULL,"
              + " PRIMARY KEY (run_id, kind, seq))",
          "CREATE TABLE journal (run_id TEXT NOT NULL, seq INTEGER NOT NULL,"
              + " entry TEXT NOT NULL, PRIMARY KEY (run_id, seq))",
          "CREATE TABLE blobs (address TEXT PRIMARY KEY, bytes BLOB NOT NULL)",
          "CREATE TABLE modules (address TEXT PRIMARY KEY, bytes BLOB NOT NULL)",
          "CREATE INDEX runs_by_time ON runs (created_ms)");

  /** Every migration, in version order from 1 with no gaps. */
  static final List<StoreMigration> MIGRATIONS =
      List.of(
          StoreMigration.ddl(1, "runs, their signed records, journals, blobs and modules", V1_DDL),
          new StoreMigration(
              2,
              "signed ledger and store head (existing runs verified, then signed), retention's"
                  + " pruned table and blob-user index",
              LedgerMigration::apply),
          StoreMigration.ddl(3, "signed warm-pool claims and evictions", PoolRecordTable.DDL),
          StoreMigration.ddl(
              4,
              // IF NOT EXISTS: a store of this schema from before versioning reads as version 2.
              "a WASI command's argv, stdin, stdout, stderr and exit status; io blobs",
              List.of(
                  "CREATE TABLE IF NOT EXISTS run_io (run_id TEXT PRIMARY KEY, args TEXT NOT NULL,"
                      + " stdin TEXT, stdin_bytes INTEGER NOT NULL,"
                      + " stdout TEXT NOT NULL, stdout_bytes INTEGER NOT NULL,"
                      + " stdout_written INTEGER NOT NULL, stdout_kept INTEGER NOT NULL,"
                      + " stderr TEXT NOT NULL, stderr_bytes INTEGER NOT NULL,"
                      + " stderr_written INTEGER NOT NULL, stderr_kept INTEGER NOT NULL,"
                      + " exit_status INTEGER NOT NULL, exited INTEGER NOT NULL)",
                  "CREATE TABLE IF NOT EXISTS io_blobs (address TEXT PRIMARY KEY, bytes BLOB NOT NULL)",
                  "CREATE INDEX IF NOT EXISTS run_io_stdin ON run_io (stdin)",
                  "CREATE INDEX IF NOT EXISTS run_io_stdout ON run_io (stdout)",
                  "CREATE INDEX IF NOT EXISTS run_io_stderr ON run_io (stderr)")),
          StoreMigration.ddl(
              5,
              "submitters: the uid that submitted each run (unsigned: the signed records carry no"
                  + " caller)",
              List.of(
                  "CREATE TABLE IF NOT EXISTS submitters (run_id TEXT PRIMARY KEY, uid INTEGER NOT NULL)")),
          StoreMigration.ddl(
              6,
              "sealed verification checkpoint (start-up verifies only the runs after it)",
              List.of(
                  "CREATE TABLE IF NOT EXISTS store_checkpoint (id INTEGER PRIMARY KEY CHECK (id = 1),"
                      + " envelope TEXT NOT NULL)")),
          StoreMigration.ddl(
              7,
              "JCP standing grants: held parents, mint policies, minted children, run checkpoints"
                  + " and applied amendments (mint count and rate window survive restarts)",
              JcpTable.DDL),
          StoreMigration.ddl(
              8,
              "durable runs: state, segments of every kind (any signer), their receipts and"
                  + " attestations, logs per segment, the resumed-once guard of each suspend",
              DurableRunTable.DDL),
          StoreMigration.ddl(
              9,
              "fleet shipping: the aggregator's inclusion proof per record (a record without one"
                  + " is unshipped)",
              List.of(
                  "CREATE TABLE IF NOT EXISTS fleet_proofs (address TEXT PRIMARY KEY,"
                      + " tree_size INTEGER NOT NULL, proof TEXT NOT NULL, proven_ms INTEGER NOT NULL)",
                  "CREATE INDEX IF NOT EXISTS records_by_address ON records (address)")),
          new StoreMigration(
              10,
              "the node log: every signed record as a leaf of a BLAKE3 RFC 9162 tree, its kept"
                  + " subtree hashes and signed C2SP checkpoints (records already stored are"
                  + " logged in the order they were stored)",
              (db, key) -> {
                // The log's tables as this code keeps them (IF NOT EXISTS): a store logged before
                // migration 16 has node_log_nodes instead, which 16 re-keys.
                try (Statement st = db.createStatement()) {
                  for (String s : NodeLog.V10_DDL) {
                    st.execute(s);
                  }
                }
                NodeLog.backfill(db);
              }),
          new StoreMigration(
              11,
              "run owners: the uid owning each durable run (single-step runs keep theirs in"
                  + " submitters); runs from before have none",
              (db, key) -> RunOwners.addColumn(db)),
          StoreMigration.ddl(
              12,
              "JCP uses: each minted child's run count and release, and the nonces of"
                  + " authenticated events until they expire (a replayed event mints nothing)",
              JcpTable.USE_DDL),
          new StoreMigration(
              13,
              "durable runs in the signed store head: each stored durable segment's address in"
                  + " store order (segments already stored, in the order they were stored), the"
                  + " head re-signed over them",
              StoreSchema::durableLedger),
          StoreMigration.ddl(
              14,
              "JCP records carried in by run bundles: the mint policy and child an imported run"
                  + " started under, kept as evidence only (never minted under, never counted)",
              JcpTable.CARRIED_DDL),
          StoreMigration.ddl(
              15,
              "durable runs: the pending export hand-off of each exporting run (bundle digest,"
                  + " size, destination, start), and the snapshot blobs each run refers to with"
                  + " their sizes (what a park holds, and what may go when no live run refers to it)",
              java.util.stream.Stream.concat(
                      ExportHandoffTable.DDL.stream(), DurableBlobs.DDL.stream())
                  .toList()),
          new StoreMigration(
              16,
              "fewer b-trees written per run: each run's submitter uid moves into its runs row (the"
                  + " submitters table and its index go), records_by_address is dropped (no query"
                  + " reads a run's records by address; its hash-keyed b-tree cost one to six page"
                  + " writes for every stored run), and the pool records' time index holds"
                  + " evictions only (the one query it serves), not every warm claim; the node"
                  + " log's subtree hashes are keyed in the order appends complete them",
              (db, key) -> {
                RunOwners.foldSubmitters(db);
                NodeLog.rekeySubtrees(db);
                try (Statement st = db.createStatement()) {
                  st.execute("DROP INDEX IF EXISTS records_by_address");
                  for (String ddl : PoolRecordTable.EVICTIONS_BY_TIME) {
                    st.execute(ddl);
                  }
                }
              }),
          // Besides the table, the version says that rows may now be encoded, so that an older
          // sandboxd, which would read them as damaged text, refuses the store instead.
          StoreMigration.ddl(
              17,
              "compact rows: signed records, ledger rows and warm-pool records kept in the store's"
                  + " encoding (StoreEncoding: hex fields as bytes, the core deflated with a fixed"
                  + " dictionary), decoding to the same text; each grants text kept once in"
                  + " grants_texts, a run referring to it by its grants_id; rows written before stay"
                  + " as they are",
              GrantsTexts.DDL),
          StoreMigration.ddl(
              18,
              "a compact node log: a leaf appended from now on keeps its address as 32 bytes, and"
                  + " leaves are found by an index of their first 8 bytes instead of the whole"
                  + " address in hex (the largest b-tree a run wrote into at random); leaves stored"
                  + " before stay hex and are found by the same index; subtree hashes of levels 1"
                  + " to 3 are no longer kept (recomputed from their 2 to 8 leaves when read)",
              NodeLog.COMPACT_DDL),
          new StoreMigration(
              19,
              "the node log's leaves of stored runs and pool evictions are no longer indexed by"
                  + " address (a hash: a page write for each of a run's 3-4 leaves) but by bucket"
                  + " (position / 256) and first 4 bytes, and each complete group of 16,384 copied"
                  + " into node_log_groups in prefix order; the prefix index keeps the leaves that"
                  + " are looked up before logging (manifests, durable records) and those logged"
                  + " before",
              (db, key) -> NodeLog.bucketed(db)),
          StoreMigration.ddl(
              20,
              "warm-pool claims in a table of their own, read by run, with no key on their address"
                  + " (a hash, whose index in pool_records took a page write at random for every"
                  + " pooled run); claims stored before stay in pool_records and are read from"
                  + " there",
              PoolRecordTable.CLAIMS_DDL),
          StoreMigration.ddl(
              21,
              "the node log's open group of leaves logged once is searched in memory, no longer"
                  + " through node_log_by_bucket (keyed by each leaf's first 4 bytes, a hash: a"
                  + " page written at random in every commit); complete groups are found in"
                  + " node_log_groups as before",
              List.of("DROP INDEX IF EXISTS node_log_by_bucket")),
          new StoreMigration(
              22,
              "each run's row names its ledger position, and the ledger loses its index by run id"
                  + " (a b-tree a stored run wrote a page of at every commit): runs get the column,"
                  + " filled from the ledger, and the ledger is rebuilt once in position order",
              (db, key) -> StoreLedger.foundByPosition(db)),
          new StoreMigration(
              23,
              "a run's signed records are appended to run_records, in store order with no key of"
                  + " their own, and its runs row names their range (records_at, records_n): the"
                  + " key of records, on the run id (a hash), took a page write at random for every"
                  + " stored run; records stored before stay in records and are read from there",
              (db, key) -> RecordRows.addTable(db)));

  /** Migration 13: the durable ledger, backfilled, and a head that covers it. */
  private static void durableLedger(Connection db, SigningKey key) throws SQLException {
    try (Statement st = db.createStatement()) {
      st.execute(StoreLedger.DURABLE_DDL);
      if (hasTable(db, "durable_segments")) {
        st.execute(
            "INSERT INTO durable_ledger (position, run_id, seq, address)"
                + " SELECT ROW_NUMBER() OVER (ORDER BY rowid) - 1, run_id, seq, address"
                + " FROM durable_segments");
      }
    }
    // The head read here predates the durable part: that is recounted from the rows just written.
    try (Statements q = new Statements(db)) {
      StoreLedger ledger = StoreLedger.rebuiltFrom(StoreLedger.open(db, q));
      if (ledger.durableSize() > 0) {
        ledger.signHead(key);
      }
    }
  }

  /** The version this code writes and reads. */
  static final int LATEST = MIGRATIONS.get(MIGRATIONS.size() - 1).version();

  static {
    for (int i = 0; i < MIGRATIONS.size(); i++) {
      if (MIGRATIONS.get(i).version() != i + 1) {
        throw new ExceptionInInitializerError("run store migrations out of order at " + i);
      }
    }
  }

  /**
   * Brings the store to {@link #LATEST}, one migration per committed transaction, and returns the
   * version it was found at. A store newer than {@link #LATEST} is refused, never downgraded. The
   * connection must not be in auto-commit mode.
   */
  static int migrate(Connection db, SigningKey key, Path file) {
    int found;
    int stamped;
    try {
      stamped = userVersion(db);
      found = version(db);
      db.commit();
    } catch (SQLException e) {
      throw new StoreException(
          "run store " + file + ": cannot read its schema version: " + e.getMessage(), e);
    }
    if (found < 0) {
      throw new StoreException(
          "run store " + file + ": schema version " + found + " is not one sandboxd writes");
    }
    if (found > LATEST) {
      throw new StoreException(
          "run store "
              + file
              + ": schema version "
              + found
              + " was written by a newer sandboxd; this one knows versions up to "
              + LATEST
              + ". Refusing to open it (a store is never downgraded): run the newer sandboxd");
    }
    for (StoreMigration m : MIGRATIONS.subList(found, MIGRATIONS.size())) {
      try {
        m.step().apply(db, key);
        try (Statement st = db.createStatement()) {
          st.execute("PRAGMA user_version = " + m.version());
        }
        db.commit();
      } catch (SQLException | RuntimeException e) {
        try {
          db.rollback();
        } catch (SQLException suppressed) {
          e.addSuppressed(suppressed);
        }
        throw new StoreException(
            "run store "
                + file
                + ": cannot upgrade from schema version "
                + (m.version() - 1)
                + " to "
                + m.version()
                + " ("
                + m.description()
                + "): "
                + e.getMessage()
                + "; the store was left at version "
                + (m.version() - 1),
            e);
      }
    }
    if (found == LATEST && stamped != LATEST) {
      // A latest-schema store from before versioning: record what it is.
      try (Statement st = db.createStatement()) {
        st.execute("PRAGMA user_version = " + LATEST);
        db.commit();
      } catch (SQLException e) {
        throw new StoreException(
            "run store " + file + ": cannot record its schema version: " + e.getMessage(), e);
      }
    }
    return found;
  }

  private static int userVersion(Connection db) throws SQLException {
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("PRAGMA user_version")) {
      return rs.next() ? rs.getInt(1) : 0;
    }
  }

  /**
   * The store's schema version. Stores from before versioning have {@code user_version} 0: one with
   * a {@code ledger} table is at version 2, one with only {@code runs} at version 1.
   */
  static int version(Connection db) throws SQLException {
    int v = userVersion(db);
    if (v != 0) {
      return v;
    }
    if (hasTable(db, "store_checkpoint")) {
      return 3;
    }
    if (hasTable(db, "ledger")) {
      return 2;
    }
    return hasTable(db, "runs") ? 1 : 0;
  }

  static boolean hasColumn(Connection db, String table, String column) throws SQLException {
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("PRAGMA table_info(" + table + ")")) {
      while (rs.next()) {
        if (rs.getString("name").equals(column)) {
          return true;
        }
      }
    }
    return false;
  }

  static boolean hasTable(Connection db, String name) throws SQLException {
    try (PreparedStatement st =
        db.prepareStatement("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")) {
      st.setString(1, name);
      try (ResultSet rs = st.executeQuery()) {
        return rs.next();
      }
    }
  }
}
