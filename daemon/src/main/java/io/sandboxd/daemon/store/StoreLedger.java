package io.sandboxd.daemon.store;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.StoreHead;
import io.sandboxd.attest.StoredRun;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * The store's ledger: one {@code sandbox.store-run/1} core per run in append order, hash-chained,
 * and the signed {@code sandbox.store-head/1} over the chain, signed once per commit (a batch of
 * runs), not once per run: the head's signature and the chain authenticate every core before it,
 * the way one transparency-log checkpoint covers all its leaves. Rows written before this change
 * hold a per-run signed envelope instead of a bare core; both are read. The length and chain are
 * kept in memory so an append reads nothing back. Not thread-safe: {@link RunStore} (or a
 * migration) calls it with the store's connection, under its monitor.
 */
final class StoreLedger {
  private final Connection db;
  // The statements run on every append, prepared once on the connection (under the store's lock).
  private final Statements q;
  private long size;
  private String chain;

  /** Durable segments stored (issue 23): their count and chain, signed into the same head. */
  private long durableSize;

  private String durableChain;

  /**
   * Heads this process signed, one at least every {@link #HEAD_STEP} runs, by their run count: a
   * verifier that lags checks the ledger in steps, each against one of them ({@link
   * #signedHeadAtMost}). A head of a transaction rolled back is dropped by {@link #reset}. Written
   * under the store's monitor, read by the verifier's thread.
   */
  private final ConcurrentSkipListMap<Long, Envelope> signedHeads = new ConcurrentSkipListMap<>();

  /** Runs between two heads kept in {@link #signedHeads}. */
  static final long HEAD_STEP = 1024;

  /** Heads kept at most (about 0.3 KiB each): 4 Mi runs at {@link #HEAD_STEP}. */
  static final int MAX_HEADS = 4096;

  private StoreLedger(
      Connection db, Statements q, long size, String chain, long durableSize, String durableChain) {
    this.db = db;
    this.q = q;
    this.size = size;
    this.chain = chain;
    this.durableSize = durableSize;
    this.durableChain = durableChain;
  }

  /** Durable-ledger DDL (migration 13): each stored durable segment's address in store order. */
  static final String DURABLE_DDL =
      "CREATE TABLE IF NOT EXISTS durable_ledger (position INTEGER PRIMARY KEY,"
          + " run_id TEXT NOT NULL, seq INTEGER NOT NULL, address TEXT NOT NULL)";

  /**
   * The ledger of {@code db} as its store head states it (the head is checked against the ledger at
   * start-up; a store without a head is an empty one or damage start-up reports).
   */
  static StoreLedger open(Connection db, Statements q) throws SQLException {
    Optional<String> text = headText(db);
    if (text.isPresent()) {
      try {
        StoreHead head = StoreHead.fromCore(CanonicalJson.parse(text.get()).get("core"));
        return new StoreLedger(
            db, q, head.runs(), head.chain(), head.durableSegments(), head.durableChain());
      } catch (AttestException e) {
        // Damage start-up reports; appends continue from what the ledger rows say.
      }
    }
    return rebuilt(db, q);
  }

  /** The signed store head's envelope as stored (not parsed or verified); empty when none. */
  static Optional<String> headText(Connection db) throws SQLException {
    return StoreDb.first(db, "SELECT envelope FROM store_head WHERE id = 1", rs -> rs.getString(1));
  }

  /** Length and chain recomputed from the ledger rows (no head, or an unreadable one). */
  private static StoreLedger rebuilt(Connection db, Statements q) throws SQLException {
    long n = 0;
    String c = StoreHead.EMPTY_CHAIN;
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("SELECT envelope FROM ledger ORDER BY position")) {
      while (rs.next()) {
        c = StoreHead.extend(c, addressOfRow(rs.getBytes(1)));
        n++;
      }
    }
    long d = 0;
    String dc = StoreHead.EMPTY_CHAIN;
    if (StoreSchema.hasTable(db, "durable_ledger")) {
      try (Statement st = db.createStatement();
          ResultSet rs = st.executeQuery("SELECT address FROM durable_ledger ORDER BY position")) {
        while (rs.next()) {
          dc = StoreHead.extend(dc, rs.getString(1));
          d++;
        }
      }
    }
    return new StoreLedger(db, q, n, c, d, dc);
  }

  /** {@code l}'s runs as its head states them, its durable part recounted from the rows. */
  static StoreLedger rebuiltFrom(StoreLedger l) throws SQLException {
    StoreLedger rows = rebuilt(l.db, l.q);
    return new StoreLedger(l.db, l.q, l.size, l.chain, rows.durableSize, rows.durableChain);
  }

  /**
   * Migration 22: a run's row names its ledger position ({@code runs.position}), through which its
   * store record is found, and the ledger is rebuilt without its index by run id. Idempotent: a
   * store whose version was stamped back is filled and rebuilt the same way.
   */
  static void foundByPosition(Connection db) throws SQLException {
    try (Statement st = db.createStatement()) {
      if (!StoreSchema.hasColumn(db, "runs", "position")) {
        st.execute("ALTER TABLE runs ADD COLUMN position INTEGER");
      }
      // Driven by the ledger, each run found by its key: no index by run id is needed.
      st.execute(
          "UPDATE runs SET position = l.position FROM ledger l WHERE l.run_id = runs.run_id");
      st.execute("DROP TABLE IF EXISTS ledger_rebuilt");
      st.execute(
          "CREATE TABLE ledger_rebuilt (position INTEGER PRIMARY KEY, run_id TEXT NOT NULL,"
              + " envelope TEXT NOT NULL)");
      st.execute(
          "INSERT INTO ledger_rebuilt (position, run_id, envelope)"
              + " SELECT position, run_id, envelope FROM ledger ORDER BY position");
      st.execute("DROP TABLE ledger");
      st.execute("ALTER TABLE ledger_rebuilt RENAME TO ledger");
    }
  }

  /** The position the next stored run takes: the ledger's length. */
  long size() {
    return size;
  }

  String chain() {
    return chain;
  }

  long durableSize() {
    return durableSize;
  }

  String durableChain() {
    return durableChain;
  }

  /** What a rollback restores. */
  record Mark(long size, String chain, long durableSize, String durableChain) {}

  Mark mark() {
    return new Mark(size, chain, durableSize, durableChain);
  }

  void reset(Mark m) {
    // Heads signed in the transaction rolled back name runs that are not stored.
    signedHeads.tailMap(m.size(), false).clear();
    size = m.size();
    chain = m.chain();
    durableSize = m.durableSize();
    durableChain = m.durableChain();
  }

  /**
   * Records a durable run's segment {@code seq} (address {@code address}) at the next durable
   * position and extends the durable chain, in the caller's transaction; the head that covers it is
   * signed by {@link #signHead}.
   */
  void appendDurable(String runId, long seq, String address) throws SQLException {
    try (PreparedStatement st =
        db.prepareStatement(
            "INSERT INTO durable_ledger (position, run_id, seq, address) VALUES (?,?,?,?)")) {
      st.setLong(1, durableSize);
      st.setString(2, runId);
      st.setLong(3, seq);
      st.setString(4, address);
      st.executeUpdate();
    }
    durableSize++;
    durableChain = StoreHead.extend(durableChain, address);
  }

  /**
   * Writes {@code stored} (whose position must be {@link #size()}) as a bare canonical core and
   * extends the chain; returns its address. The head is signed by {@link #signHead}.
   */
  String append(StoredRun stored) throws SQLException {
    if (stored.position() != size) {
      throw new IllegalStateException(
          "store-run position " + stored.position() + " is not the ledger's length " + size);
    }
    JsonNode core = stored.toCore();
    String text = CanonicalJson.recordString(core);
    String address = Blake3.hex(text.getBytes(StandardCharsets.UTF_8));
    PreparedStatement insertRun =
        q.of("INSERT INTO ledger (position, run_id, envelope) VALUES (?,?,?)");
    insertRun.setLong(1, stored.position());
    insertRun.setString(2, stored.runId());
    insertRun.setBytes(3, StoreEncoding.encode(text));
    insertRun.executeUpdate();
    size++;
    chain = StoreHead.extend(chain, address);
    return address;
  }

  /** Signs the head over the ledger as it now stands, in the caller's transaction. */
  void signHead(SigningKey key) throws SQLException {
    StoreHead head =
        new StoreHead(size, chain, System.currentTimeMillis(), durableSize, durableChain);
    PreparedStatement replaceHead =
        q.of("INSERT OR REPLACE INTO store_head (id, envelope) VALUES (1, ?)");
    Envelope signed = Envelope.sign(head.toCore(), key);
    replaceHead.setString(1, signed.toJsonLine());
    replaceHead.executeUpdate();
    Map.Entry<Long, Envelope> last = signedHeads.lastEntry();
    if (size > 0 && (last == null || size - last.getKey() >= HEAD_STEP)) {
      signedHeads.put(size, signed);
      if (signedHeads.size() > MAX_HEADS) {
        signedHeads.pollFirstEntry();
      }
    }
  }

  /**
   * The latest head this process signed over at most {@code runs} runs and committed, or empty. Ask
   * only for a count the store's committed head (read in a transaction begun before this call) has
   * reached: a head of a transaction not yet committed covers more runs than that, and one of a
   * transaction rolled back was dropped before any later commit could reach its count.
   */
  Optional<Envelope> signedHeadAtMost(long runs) {
    return Optional.ofNullable(signedHeads.floorEntry(runs)).map(Map.Entry::getValue);
  }

  /**
   * One ledger row read back: the store-run core, its address, and the per-run signed envelope that
   * older stores hold (empty for a chained core, which the signed head authenticates).
   */
  record Row(JsonNode core, String address, Optional<Envelope> signed) {
    StoredRun stored() {
      return StoredRun.fromCore(core);
    }
  }

  /** Parses a ledger row's text; throws {@link AttestException} for one that is unreadable. */
  static Row read(String text) {
    JsonNode json = CanonicalJson.parse(text);
    if (json != null && json.has("core")) {
      Envelope env = Envelope.fromJson(json);
      return new Row(env.core(), env.address(), Optional.of(env));
    }
    if (json == null || !json.isObject()) {
      throw new AttestException("store-run: expected a JSON object");
    }
    return new Row(json, Envelope.addressOf(json), Optional.empty());
  }

  /** The address a row's text contributes to the chain (its raw hash when it is unreadable). */
  static String addressOfRow(byte[] stored) {
    return Stored.read(stored).address();
  }

  /**
   * A ledger row's stored bytes read once, for the chain and for the run's check: the row, or why
   * it does not read ({@code unreadable}, then {@code row} is null).
   */
  record Stored(byte[] bytes, Row row, AttestException unreadable) {
    static Stored read(byte[] bytes) {
      try {
        return new Stored(bytes, StoreLedger.read(bytes), null);
      } catch (AttestException e) {
        return new Stored(bytes, null, e);
      }
    }

    /** The address the row contributes to the chain (its raw hash when it is unreadable). */
    String address() {
      return row != null ? row.address() : io.sandboxd.attest.Blake3.hex(bytes);
    }
  }

  /** A ledger row as stored (encoded or text), decoded then read as {@link #read(String)}. */
  static Row read(byte[] stored) {
    return read(StoreEncoding.decode(stored));
  }
}
