package io.sandboxd.daemon.store;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static java.nio.charset.StandardCharsets.UTF_8;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * What the node still has to ship to the fleet (issue 14 item 3): every signed record in the run
 * store without an inclusion proof from the aggregator. Unshipped is therefore durable with the
 * record itself (same row, same transaction); a proof is kept next to it, on the store's own
 * connection (fsynced: synchronous=FULL). Durable runs' segments and records (issue 23) ship too,
 * those this node signed: an imported run's earlier ones are other hosts' to ship, and the
 * aggregator would refuse them on this node's subject.
 */
public final class FleetOutbox {
  /**
   * Rows of one table read under one hold of the store's lock: a node with every record shipped
   * would otherwise hold it for a probe of every row it ever stored, every poll (1.35 s at 108,000
   * runs), while runs wait to be stored.
   */
  static final int CHUNK_ROWS = 1024;

  /**
   * Rows of one table read without a proof that the outbox looks up again by rowid, at most: past
   * them, it reads on from the first it could not hold, as it did for every row.
   */
  static final int PENDING_ROWS = 4096;

  /**
   * Rowid ranges one poll reads at most while it can hold the rows it reads without a proof. A
   * start's first polls read the store once from the start, and though the lock is let go between
   * ranges, the poller takes it back first (a monitor is not fair): one poll of a 100,000-run store
   * held appends off for as long as it took (0.7 s; 64 ranges a poll, 175 ms). Eight ranges take
   * about 20 ms; the next poll goes on from where this one stopped, soon ({@link #behind}).
   */
  static final int CHUNKS_PER_POLL = 8;

  private final RunStore store;
  private final int chunkRows;
  private final int pendingRows;
  private final int chunksPerPoll;
  // Rowid ranges read, for tests of what a poll reads, and those this poll may still read (under
  // the outbox's monitor).
  private long chunksRead;
  private int rangesLeft;
  private boolean behind;
  // Oldest first: single-step runs' records (before schema 23, then since), then durable runs'.
  private final List<Source> sources;

  /** One record to ship: its address and its envelope's canonical JSON. */
  public record Unshipped(String address, String envelope) {}

  public FleetOutbox(RunStore store) {
    this(store, CHUNK_ROWS, PENDING_ROWS, CHUNKS_PER_POLL);
  }

  FleetOutbox(RunStore store, int chunkRows, int pendingRows, int chunksPerPoll) {
    this.store = store;
    this.chunkRows = chunkRows;
    this.pendingRows = pendingRows;
    this.chunksPerPoll = chunksPerPoll;
    String node = store.publicKey().hex();
    this.sources =
        List.of(
            new Source("records", true, ""),
            new Source("run_records", true, ""),
            new Source("durable_segments", false, node),
            new Source("durable_records", false, node));
  }

  /**
   * Up to {@code limit} records without a proof, oldest first: single-step runs' records, then
   * durable runs' (each table in its own store order). A poll reads at most {@link
   * #CHUNKS_PER_POLL} rowid ranges, so it may answer fewer than there are (none, while a start's
   * first polls read through what was proven before); the next poll goes on.
   */
  public synchronized List<Unshipped> unshipped(int limit) {
    List<Unshipped> out = new ArrayList<>();
    rangesLeft = chunksPerPoll;
    behind = false;
    for (Source s : sources) {
      if (out.size() >= limit) {
        break;
      }
      if (!s.read(limit, out)) {
        behind = true; // the next table's records come after those not yet read
        break;
      }
    }
    return out;
  }

  /**
   * Whether the last poll stopped at its bound on ranges before it read every table through: the
   * shipper polls again soon, not after its idle wait, though the poll may have found nothing.
   */
  public synchronized boolean behind() {
    return behind;
  }

  /** How many rowid ranges the polls so far have read. */
  synchronized long chunksRead() {
    return chunksRead;
  }

  /**
   * A table of signed records, read by rowid a chunk at a time from where the last poll stopped.
   * Every row below that had a proof (or is another node's) when read, or is pending: read without
   * a proof, and looked up again by its rowid at each poll until it has one. So a record the
   * aggregator never proves (a damaged one) costs a lookup a poll, where before it held the
   * outbox's mark at itself and every poll read on past it through every row stored since, a chunk
   * per hold of the store's lock (the whole store, every 250 ms). Proofs are only ever added. In
   * memory; a new outbox (a restart) reads once from the start. Used by the one shipping thread
   * ({@link #unshipped} is synchronized).
   */
  private final class Source {
    private final String table;
    private final boolean encoded;
    private final String chunk;
    private final String again;
    private final String node;
    private long readTo = Long.MIN_VALUE;
    private final TreeSet<Long> pending = new TreeSet<>();

    /** {@code node}: only rows signed by this key ship (empty: all). */
    Source(String table, boolean encoded, String node) {
      this.table = table;
      this.encoded = encoded;
      this.node = node;
      String unproven =
          "SELECT r.rowid, r.address, r.envelope FROM "
              + table
              + " r LEFT JOIN fleet_proofs p ON p.address = r.address WHERE ";
      this.chunk =
          unproven
              + "r.rowid BETWEEN ? AND ? AND p.address IS NULL"
              + (node.isEmpty() ? "" : " AND json_extract(r.envelope, '$.public_key') = ?")
              + " ORDER BY r.rowid LIMIT ?";
      this.again =
          unproven
              + "r.rowid IN (SELECT value FROM json_each(?)) AND p.address IS NULL"
              + " ORDER BY r.rowid";
    }

    /**
     * Adds this table's unshipped rows to {@code out} until it holds {@code limit}, reading no more
     * rowid ranges than the poll has left; false when those ran out first.
     */
    boolean read(int limit, List<Unshipped> out) {
      readPending(limit, out);
      long[] span = store.onConnection(this::span);
      long at = Math.max(readTo, span[0]);
      boolean holding = true;
      while (at <= span[1] && out.size() < limit) {
        // Bounded while what was read can be held: past that the rows after those not held must
        // be read through to be answered at all, as before the bound.
        if (holding && rangesLeft == 0) {
          return false;
        }
        long from = at;
        long to = Math.min(span[1], from + chunkRows - 1);
        int want = limit - out.size();
        List<Row> rows = store.onConnection(db -> rows(db, from, to, want));
        chunksRead++;
        for (Row r : rows) {
          out.add(r.unshipped(encoded));
          if (holding && pending.size() >= pendingRows) {
            holding = false;
            readTo = r.rowid(); // the next poll reads again from here: this row on is not held
          }
          if (holding) {
            pending.add(r.rowid());
          }
        }
        // Read through the chunk's end, or through the last row taken when the limit cut it.
        long through = rows.size() == want ? rows.get(rows.size() - 1).rowid() : to;
        if (holding) {
          readTo = through + 1;
          rangesLeft--; // only a range the mark moves past counts: each one is progress
        }
        at = through + 1;
      }
      return true;
    }

    /** The pending rows still without a proof, oldest first, until {@code out} holds limit. */
    private void readPending(int limit, List<Unshipped> out) {
      List<Long> ids = new ArrayList<>(pending);
      for (int i = 0; i < ids.size() && out.size() < limit; i += chunkRows) {
        List<Long> some = ids.subList(i, Math.min(ids.size(), i + chunkRows));
        String list = some.toString();
        List<Row> rows =
            store.onConnection(
                db ->
                    StoreDb.all(
                        db,
                        again,
                        rs -> new Row(rs.getLong(1), rs.getString(2), rs.getBytes(3)),
                        list));
        pending.removeAll(some);
        for (Row r : rows) {
          pending.add(r.rowid());
          if (out.size() < limit) {
            out.add(r.unshipped(encoded));
          }
        }
      }
    }

    /** The table's lowest and highest rowid ({@code [1, 0]}: no rows, or no such table). */
    private long[] span(Connection db) throws SQLException {
      if (!StoreSchema.hasTable(db, table)) {
        return new long[] {1, 0};
      }
      try (Statement st = db.createStatement();
          ResultSet rs = st.executeQuery(spanQuery())) {
        return rs.next() && rs.getObject(1) != null
            ? new long[] {rs.getLong(1), rs.getLong(2)}
            : new long[] {1, 0};
      }
    }

    private List<Row> rows(Connection db, long from, long to, int want) throws SQLException {
      StoreDb.Row<Row> row = rs -> new Row(rs.getLong(1), rs.getString(2), rs.getBytes(3));
      return node.isEmpty()
          ? StoreDb.all(db, chunk, row, from, to, want)
          : StoreDb.all(db, chunk, row, from, to, node, want);
    }

    /**
     * Each of min and max in its own select: SQLite finds one from the end of the table, but both
     * in one select scan it whole.
     */
    String spanQuery() {
      return "SELECT (SELECT min(rowid) FROM "
          + table
          + "), (SELECT max(rowid) FROM "
          + table
          + ")";
    }

    /** The plan of a chunk's read ({@code FleetOutboxTest} holds it to a rowid range). */
    String chunkQuery() {
      return chunk;
    }

    /** The plan of a pending rows' lookup ({@code FleetOutboxTest} holds it to rowid lookups). */
    String againQuery() {
      return again;
    }
  }

  /** A row as read under the lock; its text is decoded after, off it. */
  private record Row(long rowid, String address, byte[] envelope) {
    Unshipped unshipped(boolean encoded) {
      return new Unshipped(address, encoded ? text(envelope) : new String(envelope, UTF_8));
    }
  }

  /** Each table's span, chunk and pending queries, for tests of their plans. */
  List<List<String>> queries() {
    List<List<String>> out = new ArrayList<>();
    for (Source s : sources) {
      out.add(List.of(s.spanQuery(), s.chunkQuery(), s.againQuery()));
    }
    return out;
  }

  /**
   * A single-step run's record as its text. Bytes that do not decode go out as they are, which the
   * aggregator refuses like any damaged record, so one damaged row cannot stall shipping.
   */
  private static String text(byte[] stored) {
    try {
      return StoreEncoding.decode(stored);
    } catch (StoreEncodingException e) {
      return new String(stored, ISO_8859_1);
    }
  }

  /** Keeps a verified proof; the record counts as shipped from now on. */
  public void prove(String address, long treeSize, String proofJson) {
    store.onConnection(
        db ->
            StoreDb.update(
                db,
                "INSERT OR IGNORE INTO fleet_proofs (address, tree_size, proof, proven_ms)"
                    + " VALUES (?, ?, ?, ?)",
                address,
                treeSize,
                proofJson,
                System.currentTimeMillis()));
  }
}
