package io.sandboxd.daemon.store;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.ToLongFunction;

/**
 * A run's signed records and journal as stored, for its audit: read with one query each when the
 * check asks ({@link #of}), or handed over from {@link Chunk}, which reads those of many ledger
 * positions in two queries (a query a run each cost the background seal more than the rows it
 * returns).
 */
interface RunReads {
  /** The run's records (kind, address, stored envelope), by kind then sequence. */
  List<RecordRow> records() throws SQLException;

  /** The run's journal entries (sequence, stored bytes), by sequence. */
  List<JournalRow> journal() throws SQLException;

  /** Why {@code row}'s grants text is damaged, as {@link GrantsTexts#damage} finds; empty: not. */
  Optional<String> grantsDamage(StoreAudit.RunRow row) throws SQLException;

  /** One {@code records} row. */
  record RecordRow(String kind, String address, byte[] envelope) {
    /** A run's records, by kind then sequence. */
    static final String OF_RUN =
        "SELECT kind, address, envelope FROM " + RecordRows.OF_RUN_ID + " ORDER BY kind, seq";

    /** The row from columns {@code at} (kind), {@code at + 1} (address), {@code at + 2}. */
    static RecordRow read(ResultSet rs, int at) throws SQLException {
      return new RecordRow(rs.getString(at), rs.getString(at + 1), rs.getBytes(at + 2));
    }
  }

  /** One {@code journal} row: its sequence and the entry's UTF-8 bytes as stored. */
  record JournalRow(long seq, byte[] entry) {
    /** A run's journal, by sequence. */
    static final String OF_RUN = "SELECT seq, entry FROM journal WHERE run_id = ? ORDER BY seq";

    /** The row from columns {@code at} (seq) and {@code at + 1} (entry). */
    static JournalRow read(ResultSet rs, int at) throws SQLException {
      byte[] entry = rs.getBytes(at + 1);
      // getBytes answers null for an empty text.
      return new JournalRow(rs.getLong(at), entry == null ? new byte[0] : entry);
    }
  }

  /** Reads a row from its columns starting at a given one. */
  @FunctionalInterface
  interface RowReader<T> {
    T read(ResultSet rs, int at) throws SQLException;
  }

  /** Reads of {@code runId}'s rows, each query made when it is first asked for. */
  static RunReads of(Statements q, String runId) {
    return new RunReads() {
      @Override
      public List<RecordRow> records() throws SQLException {
        return rows(q.of(RecordRow.OF_RUN), runId, RecordRow::read);
      }

      @Override
      public List<JournalRow> journal() throws SQLException {
        return rows(q.of(JournalRow.OF_RUN), runId, JournalRow::read);
      }

      @Override
      public Optional<String> grantsDamage(StoreAudit.RunRow row) throws SQLException {
        return GrantsTexts.damage(q, row);
      }
    };
  }

  /** The rows {@code st} finds for {@code runId}, each read from its first column. */
  private static <T> List<T> rows(PreparedStatement st, String runId, RowReader<T> reader)
      throws SQLException {
    st.setString(1, runId);
    List<T> out = new ArrayList<>(3);
    try (ResultSet rs = st.executeQuery()) {
      while (rs.next()) {
        out.add(reader.read(rs, 1));
      }
    }
    return out;
  }

  /**
   * The rows of the runs at ledger positions {@code [from, from + size)}, read in two queries (one
   * over records, one over the journal, each joined to the ledger by run id), in the caller's read
   * transaction; positions with no run, or a run with no rows, get empty lists.
   */
  final class Chunk {
    /** Ledger positions one chunk reads at most. */
    static final int SIZE = 64;

    /**
     * Bytes of rows one chunk holds at most: a run may journal 64 MiB, so 64 runs' rows at once are
     * bounded by bytes too; the chunk ends before the run that would pass this, and a run that
     * passes it alone is read on its own, as before chunks.
     */
    static final long MAX_BYTES = 8L << 20;

    private final Statements q;
    private final long from;
    private final long maxBytes;
    private long end;
    // Bytes of rows held, in all and by position (the chunk's end moves back over what it drops).
    private long bytes;
    private final long[] held = new long[SIZE];
    private final List<List<RecordRow>> records = new ArrayList<>(SIZE);
    private final List<List<JournalRow>> journal = new ArrayList<>(SIZE);
    // A grants text is one row for many runs: its verdict, found once, holds for the whole chunk
    // (read in one transaction, so the row cannot change in between).
    private final Map<String, Optional<String>> grants = new HashMap<>();

    private Chunk(Statements q, long from, long maxBytes) {
      this.q = q;
      this.from = from;
      this.maxBytes = maxBytes;
      this.end = from + SIZE;
      for (int i = 0; i < SIZE; i++) {
        records.add(new ArrayList<>(3));
        journal.add(new ArrayList<>());
      }
    }

    /** The records of the runs at ledger positions {@code [?1, ?2)}, position first. */
    static final String RECORDS =
        "SELECT position, kind, address, envelope FROM "
            + RecordRows.byLedger("l.position >= ?1 AND l.position < ?2")
            + " ORDER BY position, kind, seq";

    /** Reads the chunk that starts at ledger position {@code from}. */
    static Chunk read(Statements q, long from) throws SQLException {
      return read(q, from, MAX_BYTES);
    }

    /** As above, holding at most {@code maxBytes} of rows. */
    static Chunk read(Statements q, long from, long maxBytes) throws SQLException {
      Chunk c = new Chunk(q, from, maxBytes);
      c.fill(RECORDS, c.records, RecordRow::read, r -> r.envelope().length + 128L);
      c.fill(
          "SELECT l.position, j.seq, j.entry FROM ledger l"
              + " JOIN journal j ON j.run_id = l.run_id"
              + " WHERE l.position >= ? AND l.position < ? ORDER BY l.position, j.seq",
          c.journal,
          JournalRow::read,
          j -> j.entry().length + 16L);
      return c;
    }

    /** Adds the rows {@code sql} finds in this chunk (position first) to their runs' lists. */
    private <T> void fill(
        String sql, List<List<T>> into, RowReader<T> reader, ToLongFunction<T> size)
        throws SQLException {
      PreparedStatement st = q.of(sql);
      StoreDb.bind(st, from, end);
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          long position = rs.getLong(1);
          if (position >= end) {
            break;
          }
          T row = reader.read(rs, 2);
          long n = size.applyAsLong(row);
          if (bytes + n > maxBytes) {
            // The chunk ends before this run: what it read of the run is dropped with it.
            for (long p = position; p < end; p++) {
              int i = index(p);
              bytes -= held[i];
              held[i] = 0;
              records.get(i).clear();
              journal.get(i).clear();
            }
            end = position;
            return;
          }
          bytes += n;
          held[index(position)] += n;
          into.get(index(position)).add(row);
        }
      }
    }

    /** Whether the chunk covers ledger position {@code position}. */
    boolean covers(long position) {
      return position >= from && position < end;
    }

    /** The reads of the run at {@code position}, which the chunk covers. */
    RunReads at(long position) {
      int i = index(position);
      return new RunReads() {
        @Override
        public List<RecordRow> records() {
          return records.get(i);
        }

        @Override
        public List<JournalRow> journal() {
          return journal.get(i);
        }

        @Override
        public Optional<String> grantsDamage(StoreAudit.RunRow row) throws SQLException {
          if (!GrantsTexts.REFERENCE.equals(row.grants())) {
            return GrantsTexts.damage(q, row);
          }
          Optional<String> known = grants.get(row.grantsId());
          if (known == null) {
            known = GrantsTexts.damage(q, row);
            grants.put(row.grantsId(), known);
          }
          return known;
        }
      };
    }

    private int index(long position) {
      if (!covers(position)) {
        throw new IllegalArgumentException(
            "position " + position + " is outside the chunk at " + from);
      }
      return (int) (position - from);
    }
  }
}
