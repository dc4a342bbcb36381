package io.sandboxd.daemon.store;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

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
  record RecordRow(String kind, String address, byte[] envelope) {}

  /** One {@code journal} row: its sequence and the entry's UTF-8 bytes as stored. */
  record JournalRow(long seq, byte[] entry) {}

  /** Reads of {@code runId}'s rows, each query made when it is first asked for. */
  static RunReads of(Statements q, String runId) {
    return new RunReads() {
      @Override
      public List<RecordRow> records() throws SQLException {
        return RunReads.records(
            q.of("SELECT kind, address, envelope FROM records WHERE run_id = ? ORDER BY kind, seq"),
            runId);
      }

      @Override
      public List<JournalRow> journal() throws SQLException {
        return RunReads.journal(
            q.of("SELECT seq, entry FROM journal WHERE run_id = ? ORDER BY seq"), runId);
      }

      @Override
      public Optional<String> grantsDamage(StoreAudit.RunRow row) throws SQLException {
        return GrantsTexts.damage(q, row);
      }
    };
  }

  private static List<RecordRow> records(PreparedStatement st, Object... params)
      throws SQLException {
    StoreDb.bind(st, params);
    List<RecordRow> out = new ArrayList<>(3);
    try (ResultSet rs = st.executeQuery()) {
      while (rs.next()) {
        out.add(new RecordRow(rs.getString(1), rs.getString(2), rs.getBytes(3)));
      }
    }
    return out;
  }

  private static List<JournalRow> journal(PreparedStatement st, Object... params)
      throws SQLException {
    StoreDb.bind(st, params);
    List<JournalRow> out = new ArrayList<>();
    try (ResultSet rs = st.executeQuery()) {
      while (rs.next()) {
        out.add(new JournalRow(rs.getLong(1), entryBytes(rs.getBytes(2))));
      }
    }
    return out;
  }

  /** An entry's bytes as read ({@code getBytes} answers null for an empty text). */
  private static byte[] entryBytes(byte[] read) {
    return read == null ? new byte[0] : read;
  }

  /**
   * The rows of the runs at ledger positions {@code [from, from + size)}, read in two queries (one
   * over records, one over the journal, each joined to the ledger by run id), in the caller's read
   * transaction; positions with no run, or a run with no rows, get empty lists.
   */
  final class Chunk {
    /** Ledger positions one chunk reads. */
    static final int SIZE = 64;

    private final Statements q;
    private final long from;
    // A grants text is one row for many runs: its verdict, found once, holds for the whole chunk
    // (read in one transaction, so the row cannot change in between).
    private final Map<String, Optional<String>> grants = new HashMap<>();
    private final List<List<RecordRow>> records = new ArrayList<>(SIZE);
    private final List<List<JournalRow>> journal = new ArrayList<>(SIZE);

    private Chunk(Statements q, long from) {
      this.q = q;
      this.from = from;
      for (int i = 0; i < SIZE; i++) {
        records.add(new ArrayList<>(3));
        journal.add(new ArrayList<>());
      }
    }

    /** Reads the chunk that starts at ledger position {@code from}. */
    static Chunk read(Statements q, long from) throws SQLException {
      Chunk c = new Chunk(q, from);
      PreparedStatement rec =
          q.of(
              "SELECT l.position, s.kind, s.address, s.envelope FROM ledger l"
                  + " JOIN records s ON s.run_id = l.run_id"
                  + " WHERE l.position >= ? AND l.position < ? ORDER BY l.position, s.kind, s.seq");
      StoreDb.bind(rec, from, from + SIZE);
      try (ResultSet rs = rec.executeQuery()) {
        while (rs.next()) {
          c.records
              .get(c.index(rs.getLong(1)))
              .add(new RecordRow(rs.getString(2), rs.getString(3), rs.getBytes(4)));
        }
      }
      PreparedStatement jr =
          q.of(
              "SELECT l.position, j.seq, j.entry FROM ledger l"
                  + " JOIN journal j ON j.run_id = l.run_id"
                  + " WHERE l.position >= ? AND l.position < ? ORDER BY l.position, j.seq");
      StoreDb.bind(jr, from, from + SIZE);
      try (ResultSet rs = jr.executeQuery()) {
        while (rs.next()) {
          c.journal
              .get(c.index(rs.getLong(1)))
              .add(new JournalRow(rs.getLong(2), entryBytes(rs.getBytes(3))));
        }
      }
      return c;
    }

    /** Whether the chunk covers ledger position {@code position}. */
    boolean covers(long position) {
      return position >= from && position - from < SIZE;
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
