package io.sandboxd.daemon.store;

import io.sandboxd.attest.Hex;
import io.sandboxd.attest.LogCheckpoint;
import io.sandboxd.attest.LogTree;
import io.sandboxd.attest.MerkleHash;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.TreeHead;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Optional;

/**
 * The node's append-only log (issue 14): every record the node signs is a leaf (its address, the
 * BLAKE3 tree of WIRE.md §2.10), written in the transaction that stores the record. The perfect
 * subtree hashes above the leaves are kept in {@code node_log_subtrees} (a leaf's is recomputed
 * from its address), so an append is O(log n) (the right frontier is held in memory) and a proof at
 * any size is O(log n) reads. Checkpoints are C2SP signed notes. Not thread-safe: {@link RunStore}
 * calls it under its monitor.
 */
final class NodeLog {
  static final MerkleHash HASH = MerkleHash.blake3();

  /**
   * The kept subtree hashes, keyed by {@link #subtreeKey}: in the order appends complete them, so
   * an append writes the b-tree's last page only. (Keyed by level first, as before migration 16,
   * each level was a region of its own and an append wrote a page in each level it completed.)
   */
  static final String SUBTREES_DDL =
      "CREATE TABLE IF NOT EXISTS node_log_subtrees (pos INTEGER PRIMARY KEY, hash BLOB NOT NULL)";

  /**
   * The key of the perfect subtree {@code level}/{@code index}: the last leaf it covers, then its
   * level (below 64), so keys grow as the leaves that complete the subtrees are appended.
   */
  static long subtreeKey(int level, long index) {
    return ((((index + 1) << level) - 1) << 6) | level;
  }

  /** The same key in SQL, over the columns {@code level} and {@code idx} of the old table. */
  static final String SUBTREE_KEY_SQL = "((((idx + 1) << level) - 1) << 6) | level";

  /**
   * The log's tables as migration 10 made them, frozen: a leaf's address as 64 hex characters and
   * indexed whole. Migration 18 ({@link #COMPACT_DDL}) changes how new leaves are kept.
   */
  static final List<String> V10_DDL =
      List.of(
          "CREATE TABLE IF NOT EXISTS node_log (idx INTEGER PRIMARY KEY, address TEXT NOT NULL,"
              + " kind TEXT NOT NULL)",
          "CREATE INDEX IF NOT EXISTS node_log_by_address ON node_log (address)",
          SUBTREES_DDL,
          "CREATE TABLE IF NOT EXISTS node_log_checkpoints (tree_size INTEGER PRIMARY KEY,"
              + " signed_ms INTEGER NOT NULL, note TEXT NOT NULL)");

  /**
   * Migration 18: a leaf appended from now on keeps its address as its 32 bytes (a BLOB), and
   * leaves are found by an index of their first 8 bytes, {@link #PREFIX}, instead of the whole
   * address as hex. Every append wrote about 80 bytes into a hash-ordered b-tree, three or four
   * times a run, the store's largest per-run write; the prefix index keeps about 17 bytes an entry.
   * Leaves stored before stay hex TEXT (not rewritten; the index covers them by their first 8 hex
   * characters), so a lookup asks for both forms ({@link #find}).
   */
  static final List<String> COMPACT_DDL =
      List.of(
          "DROP INDEX IF EXISTS node_log_by_address",
          "CREATE INDEX IF NOT EXISTS node_log_by_prefix ON node_log (substr(address, 1, 8))");

  /** The indexed expression: a blob's first 8 bytes, or an older hex row's first 8 characters. */
  private static final String PREFIX = "substr(address, 1, 8)";

  /** Leaves per bucket: {@code bucket = idx >> BUCKET_BITS} (see {@link #bucketed}). */
  static final int BUCKET_BITS = 8;

  /** Leaves per group: {@code group = idx >> GROUP_BITS} (see {@link #bucketed}). */
  static final int GROUP_BITS = 14;

  /**
   * Migration 19: the leaves a stored run appends (its segment, receipt, attestation and claim) and
   * pool evictions are no longer indexed by their address alone. That key is a hash: the prefix
   * index took each such leaf on a page of its own, three or four pages a run, half the pages a
   * commit wrote at 16 clients. Instead, two levels, each written in order:
   *
   * <ul>
   *   <li>the newest leaves by bucket ({@code idx >> BUCKET_BITS}), then their first 4 bytes: a
   *       bucket's entries share a page or two, the newest bucket's, so a commit writes about one;
   *   <li>once a group of {@code 2^GROUP_BITS} leaves is complete, the commit that completes it
   *       copies the group's entries into {@code node_log_groups}, sorted by prefix: a b-tree keyed
   *       by group first, so the copy fills new pages at its end (about 64, once per 16,384
   *       leaves).
   * </ul>
   *
   * {@link #find} seeks once in every complete group (about 60 at a million leaves). Since
   * migration 21 the bucket index is gone: the open group's leaves are searched in memory ({@link
   * OpenGroup}), and a leaf's bucket only marks it as logged once. These records are logged once,
   * when stored, and are never looked up to avoid logging them twice. The prefix index keeps the
   * other leaves (manifests, durable records, store checkpoints, and every leaf logged before),
   * which {@link #contains} asks about.
   */
  static void bucketed(Connection db) throws SQLException {
    try (Statement st = db.createStatement()) {
      if (!StoreSchema.hasColumn(db, "node_log", "bucket")) {
        st.execute("ALTER TABLE node_log ADD COLUMN bucket INTEGER");
      }
      st.execute("DROP INDEX IF EXISTS node_log_by_prefix");
      st.execute(
          "CREATE INDEX node_log_by_prefix ON node_log (substr(address, 1, 8))"
              + " WHERE bucket IS NULL");
      st.execute(
          "CREATE INDEX IF NOT EXISTS node_log_by_bucket ON node_log"
              + " (bucket, substr(address, 1, 4)) WHERE bucket IS NOT NULL");
      st.execute(
          "CREATE TABLE IF NOT EXISTS node_log_groups (grp INTEGER NOT NULL, prefix BLOB NOT NULL,"
              + " idx INTEGER NOT NULL, PRIMARY KEY (grp, prefix, idx)) WITHOUT ROWID");
    }
  }

  /** Leaf kinds: what sort of signed record a leaf's address names. */
  static final String SEGMENT = "segment";

  static final String RECEIPT = "receipt";
  static final String ATTESTATION = "attestation";
  static final String CLAIM = "claim";
  static final String EVICTION = "eviction";
  static final String STORED_RUN = "stored-run";
  static final String STORE_CHECKPOINT = "store-checkpoint";
  static final String MANIFEST = "manifest";

  /** How often the node signs a checkpoint: after this many new leaves, or this many ms. */
  record Policy(String origin, long everyRecords, long everyMs, boolean enabled) {
    Policy {
      if (everyRecords < 1 || everyMs < 1) {
        throw new IllegalArgumentException("checkpoint intervals must be >= 1");
      }
    }
  }

  private final Connection db;
  private Policy policy;
  private LogTree.Frontier frontier;
  private long checkpointSize;
  private long checkpointMs;
  // The statements run on every append and proof, prepared once on the connection (shared with the
  // store's other tables, so that a failed statement makes all of them be prepared anew).
  private final Statements q;
  // Whether node_log_groups exists (not before migration 19); read once.
  private Boolean groupsTable;
  // The open group's leaves, found in memory rather than through an index (see OpenGroup).
  private final OpenGroup openGroup = new OpenGroup(GROUP_BITS);

  /**
   * The lowest level whose perfect subtree hashes are kept in {@code node_log_subtrees}. Since
   * migration 18, levels 1 to 3 (seven of every eight subtrees) are not: one is recomputed from its
   * 2 to 8 leaves when a proof or the frontier needs it. Rows kept before at those levels are left
   * as they are and not read.
   */
  static final int FIRST_KEPT_LEVEL = 4;

  NodeLog(Connection db, Statements q, Policy policy) throws SQLException {
    this.db = db;
    this.q = q;
    this.policy = policy;
    reload();
  }

  void policy(Policy p) {
    this.policy = p;
  }

  Policy policy() {
    return policy;
  }

  /** Re-reads the frontier and the last checkpoint from the store (after a rollback). */
  void reload() throws SQLException {
    frontier = LogTree.Frontier.load(HASH, nodes(), storedSize(db));
    loadOpenGroup();
    checkpointSize = -1;
    checkpointMs = 0;
    try (Statement st = db.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT tree_size, signed_ms FROM node_log_checkpoints"
                    + " ORDER BY tree_size DESC LIMIT 1")) {
      if (rs.next()) {
        checkpointSize = rs.getLong(1);
        checkpointMs = rs.getLong(2);
      }
    }
  }

  /** What a rollback must restore: the in-memory state as it was at {@link #mark()}. */
  record Mark(LogTree.Frontier frontier, long checkpointSize, long checkpointMs) {}

  Mark mark() {
    return new Mark(frontier.copy(), checkpointSize, checkpointMs);
  }

  void reset(Mark m) {
    frontier = m.frontier().copy();
    checkpointSize = m.checkpointSize();
    checkpointMs = m.checkpointMs();
    if (!openGroup.holds(frontier.size())) {
      // The rolled-back appends began a group: the one the log is back in is read again.
      try {
        loadOpenGroup();
      } catch (SQLException e) {
        throw new StoreException("node log: cannot read its open group: " + e.getMessage(), e);
      }
    }
  }

  /**
   * Reads the open group's leaves (at most {@code 2^GROUP_BITS}) into {@link #openGroup}: those
   * with a bucket were logged once, and only those are searched there by {@link #find}.
   */
  private void loadOpenGroup() throws SQLException {
    openGroup.clear();
    long size = frontier.size();
    long start = size >> GROUP_BITS << GROUP_BITS;
    if (start == size || !StoreSchema.hasColumn(db, "node_log", "bucket")) {
      return; // an empty group, or a migration before 19, which logs nothing once
    }
    try (PreparedStatement st =
        db.prepareStatement(
            "SELECT idx, address, bucket IS NOT NULL FROM node_log WHERE idx >= ? AND idx < ?"
                + " ORDER BY idx")) {
      StoreDb.bind(st, start, size);
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          byte[] address = rs.getBytes(2);
          // A damaged address is never found (a proof that reads it reports it).
          boolean once = rs.getBoolean(3) && address != null && address.length == 32;
          openGroup.put(rs.getLong(1), once ? address : new byte[4], once);
        }
      }
    }
  }

  static long storedSize(Connection db) throws SQLException {
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("SELECT COALESCE(MAX(idx) + 1, 0) FROM node_log")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  long size() {
    return frontier.size();
  }

  TreeHead head() {
    return frontier.head();
  }

  /**
   * Appends the record {@code address} (64 hex) as the next leaf, in the open transaction, found by
   * the prefix index (so {@link #contains} sees it).
   */
  void append(String kind, String address) throws SQLException {
    append(kind, address, false);
  }

  /**
   * Appends a record logged only here, once (a stored run's own records, a pool eviction), as the
   * next leaf, in the open transaction: found in its group ({@link #bucketed}, {@link OpenGroup}),
   * which {@link #contains} does not search.
   */
  void appendOnce(String kind, String address) throws SQLException {
    append(kind, address, true);
  }

  private void append(String kind, String address, boolean once) throws SQLException {
    if (!policy.enabled()) {
      return;
    }
    byte[] raw = Hex.decode(address, 32, "log leaf address");
    PreparedStatement insertNode = q.of("INSERT INTO node_log_subtrees (pos, hash) VALUES (?,?)");
    long idx = frontier.size();
    PreparedStatement leaf;
    if (once) {
      leaf = q.of("INSERT INTO node_log (idx, address, kind, bucket) VALUES (?,?,?,?)");
      leaf.setLong(4, idx >> BUCKET_BITS);
    } else {
      // Without the bucket column: migration 10 logs the records a store already held through
      // here, before migration 19 adds it.
      leaf = q.of("INSERT INTO node_log (idx, address, kind) VALUES (?,?,?)");
    }
    leaf.setLong(1, idx);
    leaf.setBytes(2, raw);
    leaf.setString(3, kind);
    leaf.executeUpdate();
    openGroup.put(idx, raw, once);
    if (((idx + 1) & ((1L << GROUP_BITS) - 1)) == 0) {
      group(idx >> GROUP_BITS);
    }
    for (LogTree.Node n : frontier.append(HASH.leaf(raw))) {
      if (n.level() < FIRST_KEPT_LEVEL) {
        continue; // recomputed from at most 8 leaves when read (a leaf's from its address)
      }
      insertNode.setLong(1, subtreeKey(n.level(), n.index()));
      insertNode.setBytes(2, n.hash());
      insertNode.addBatch();
    }
    insertNode.executeBatch();
  }

  /** Copies the entries of complete group {@code g}'s bucketed leaves in prefix order. */
  private void group(long g) throws SQLException {
    if (groupsTable == null) {
      groupsTable = StoreSchema.hasTable(db, "node_log_groups");
    }
    if (!groupsTable) {
      return; // a migration before 19 logging the records a store held: none is bucketed
    }
    PreparedStatement insertGroup =
        q.of(
            "INSERT INTO node_log_groups (grp, prefix, idx) SELECT ?, substr(address, 1, 4), idx"
                + " FROM node_log WHERE idx >= ? AND idx < ? AND bucket IS NOT NULL"
                + " ORDER BY 2, 3");
    insertGroup.setLong(1, g);
    insertGroup.setLong(2, g << GROUP_BITS);
    insertGroup.setLong(3, (g + 1) << GROUP_BITS);
    insertGroup.executeUpdate();
  }

  /** Whether a checkpoint is due: N new leaves, or T ms since the last one with any new leaf. */
  boolean due(long nowMs) {
    long fresh = frontier.size() - Math.max(0, checkpointSize);
    if (!policy.enabled() || frontier.size() == checkpointSize) {
      return false;
    }
    return fresh >= policy.everyRecords() || nowMs - checkpointMs >= policy.everyMs();
  }

  /**
   * Signs a checkpoint at the current size into the open transaction (none if the newest already
   * has this size) and returns the newest note.
   */
  String checkpoint(SigningKey key, long nowMs) throws SQLException {
    if (frontier.size() == checkpointSize) {
      return latest().orElseThrow().note();
    }
    String note = LogCheckpoint.of(policy.origin(), frontier.head()).sign(key);
    StoreDb.update(
        db,
        "INSERT OR REPLACE INTO node_log_checkpoints (tree_size, signed_ms, note) VALUES (?,?,?)",
        frontier.size(),
        nowMs,
        note);
    checkpointSize = frontier.size();
    checkpointMs = nowMs;
    return note;
  }

  /** A stored checkpoint note and the size it is for. */
  record Stored(long treeSize, long signedMs, String note) {}

  Optional<Stored> latest() throws SQLException {
    return StoreDb.first(
        db,
        "SELECT tree_size, signed_ms, note FROM node_log_checkpoints"
            + " ORDER BY tree_size DESC LIMIT 1",
        rs -> new Stored(rs.getLong(1), rs.getLong(2), rs.getString(3)));
  }

  /** A leaf: its index, address and kind. */
  record Leaf(long index, String address, String kind) {}

  /**
   * The first leaf holding {@code address} (64 hex), if any: one logged through the prefix index
   * (kept as bytes since migration 18, as hex before it) or one logged once, in its complete group
   * ({@link #bucketed}) or in the open group ({@link OpenGroup}).
   */
  Optional<Leaf> find(String address) throws SQLException {
    byte[] raw = Hex.decode(address, 32, "log leaf address");
    Optional<Leaf> first = findLogged(address, raw);
    long size = frontier.size();
    if (size == 0) {
      return first;
    }
    byte[] prefix = java.util.Arrays.copyOf(raw, 4);
    long open = size >> GROUP_BITS;
    // Group by group: one seek each, where a key is a range of positions.
    if (open > 0) {
      first =
          earlier(
              first,
              StoreDb.first(
                  db,
                  "WITH RECURSIVE g(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM g WHERE k < ?)"
                      + " SELECT n.idx, n.kind FROM g JOIN node_log_groups x ON x.grp = g.k"
                      + " AND x.prefix = ? JOIN node_log n ON n.idx = x.idx AND n.address = ?"
                      + " ORDER BY n.idx LIMIT 1",
                  rs -> new Leaf(rs.getLong(1), address, rs.getString(2)),
                  open - 1,
                  prefix,
                  raw));
    }
    // The open group: its leaves' first 4 bytes in memory, each match read by its position.
    if (!openGroup.holds(size)) {
      loadOpenGroup();
    }
    PreparedStatement selectOnce = q.of("SELECT kind FROM node_log WHERE idx = ? AND address = ?");
    for (long idx = openGroup.next(raw, open << GROUP_BITS, size);
        idx >= 0;
        idx = openGroup.next(raw, idx + 1, size)) {
      selectOnce.setLong(1, idx);
      selectOnce.setBytes(2, raw);
      try (ResultSet rs = selectOnce.executeQuery()) {
        if (rs.next()) {
          return earlier(first, Optional.of(new Leaf(idx, address, rs.getString(1))));
        }
      }
    }
    return first;
  }

  private static Optional<Leaf> earlier(Optional<Leaf> a, Optional<Leaf> b) {
    if (a.isPresent() && b.isPresent()) {
      return a.get().index() <= b.get().index() ? a : b;
    }
    return a.isPresent() ? a : b;
  }

  private Optional<Leaf> findLogged(String address, byte[] raw) throws SQLException {
    return StoreDb.first(
        db,
        "SELECT idx, kind FROM node_log WHERE bucket IS NULL AND "
            + PREFIX
            + " IN (?, ?) AND address IN (?, ?) ORDER BY idx LIMIT 1",
        rs -> new Leaf(rs.getLong(1), address, rs.getString(2)),
        java.util.Arrays.copyOf(raw, 8),
        address.substring(0, 8),
        raw,
        address);
  }

  /**
   * Whether {@code address} was logged already through {@link #append} (manifests are logged once,
   * not per start; a durable record once, however often it is stored). Leaves logged once are not
   * searched: no record is logged both ways.
   */
  boolean contains(String address) throws SQLException {
    return findLogged(address, Hex.decode(address, 32, "log leaf address")).isPresent();
  }

  /** The kept perfect-subtree hashes, read from {@code node_log_subtrees}. */
  LogTree.Nodes nodes() {
    return (level, index) -> {
      try {
        if (level < FIRST_KEPT_LEVEL) {
          return fromLeaves(level, index);
        }
        PreparedStatement selectNode = q.of("SELECT hash FROM node_log_subtrees WHERE pos = ?");
        selectNode.setLong(1, subtreeKey(level, index));
        try (ResultSet rs = selectNode.executeQuery()) {
          if (!rs.next()) {
            throw new StoreException(
                "node log: subtree hash " + level + "/" + index + " is missing from the store");
          }
          return rs.getBytes(1);
        }
      } catch (SQLException e) {
        throw new StoreException("node log: cannot read a subtree hash: " + e.getMessage(), e);
      }
    };
  }

  /** The hash of subtree {@code level}/{@code index}, from its 2^level leaves. */
  private byte[] fromLeaves(int level, long index) throws SQLException {
    PreparedStatement selectLeaf =
        q.of("SELECT idx, address FROM node_log WHERE idx >= ? AND idx < ? ORDER BY idx");
    long first = index << level;
    long end = first + (1L << level);
    selectLeaf.setLong(1, first);
    selectLeaf.setLong(2, end);
    byte[][] hashes = new byte[1 << level][];
    long next = first;
    try (ResultSet rs = selectLeaf.executeQuery()) {
      while (rs.next() && rs.getLong(1) == next) {
        hashes[(int) (next - first)] = HASH.leaf(leafAddress(rs, next, 2));
        next++;
      }
    }
    if (next < end) {
      throw new StoreException("node log: leaf " + next + " is missing from the store");
    }
    for (int width = hashes.length; width > 1; width /= 2) {
      for (int i = 0; i < width / 2; i++) {
        hashes[i] = HASH.node(hashes[2 * i], hashes[2 * i + 1]);
      }
    }
    return hashes[0];
  }

  /** A stored leaf's 32 address bytes: a BLOB since migration 18, 64 hex characters before. */
  private static byte[] leafAddress(ResultSet rs, long index, int column) throws SQLException {
    Object stored = rs.getObject(column);
    if (stored instanceof byte[] raw) {
      if (raw.length != 32) {
        throw new StoreException(
            "node log: leaf " + index + " keeps " + raw.length + " address bytes, not 32");
      }
      return raw;
    }
    return Hex.decode(String.valueOf(stored), 32, "node_log.address of leaf " + index);
  }

  /**
   * Migration 16: the subtree hashes move from {@code node_log_nodes} (keyed by level, then index)
   * to {@code node_log_subtrees}. Idempotent: a store whose log was made after it has no old table.
   */
  static void rekeySubtrees(Connection db) throws SQLException {
    try (Statement st = db.createStatement()) {
      st.execute(SUBTREES_DDL);
      if (StoreSchema.hasTable(db, "node_log_nodes")) {
        st.execute(
            "INSERT OR IGNORE INTO node_log_subtrees (pos, hash) SELECT "
                + SUBTREE_KEY_SQL
                + ", hash FROM node_log_nodes");
        st.execute("DROP TABLE node_log_nodes");
      }
    }
  }

  /**
   * Migration step: the log of a store from before it, filled with the records already there in the
   * order they were stored (per run: segments, receipts, attestations by seq, the warm-pool claim,
   * the store record), then evictions and the sealed store checkpoint.
   */
  static void backfill(Connection db) throws SQLException {
    try (Statements q = new Statements(db)) {
      backfill(new NodeLog(db, q, new Policy("sandboxd/backfill", 1, 1, true)), db);
    }
  }

  private static void backfill(NodeLog log, Connection db) throws SQLException {
    if (log.size() > 0) {
      return;
    }
    try (Statement st = db.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT kind, address FROM ("
                    + " SELECT l.position AS p, 0 AS o, r.seq AS s, CASE r.kind WHEN 'segment'"
                    + " THEN 0 WHEN 'receipt' THEN 1 ELSE 2 END AS k, r.kind AS kind, r.address"
                    + " FROM ledger l JOIN records r ON r.run_id = l.run_id"
                    + " UNION ALL SELECT l.position, 1, 0, 0, 'claim', c.address FROM ledger l"
                    + " JOIN pool_records c ON c.run_id = l.run_id AND c.kind = 'claim'"
                    + " UNION ALL SELECT l.position, 2, 0, 0, 'stored-run',"
                    + " json_extract(l.envelope, '$.address') FROM ledger l"
                    // A chained store record (no signature of its own) is no leaf; nor is a row
                    // that migration 2 wrote in this code's encoding (a chained core, as a blob).
                    + " WHERE typeof(l.envelope) = 'text'"
                    + " AND json_extract(l.envelope, '$.address') IS NOT NULL"
                    + " UNION ALL SELECT 9e18, e.created_ms, 0, 0, 'eviction', e.address"
                    + " FROM pool_records e WHERE e.kind = 'evict'"
                    + " UNION ALL SELECT 9.1e18, 0, 0, 0, 'store-checkpoint',"
                    + " json_extract(envelope, '$.address') FROM store_checkpoint"
                    + ") ORDER BY p, o, s, k")) {
      while (rs.next()) {
        log.append(rs.getString(1), rs.getString(2));
      }
    }
  }
}
