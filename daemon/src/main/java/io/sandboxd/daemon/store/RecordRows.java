package io.sandboxd.daemon.store;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

/**
 * Where single-step runs' signed records are kept, as the SQL that reads them. A run stored since
 * schema 23 keeps its records in {@code run_records}, {@link #PER_RUN} of them at consecutive ids
 * from the one its {@code runs} row names ({@code records_at}): rows appended in store order with
 * no key of their own, so a stored run writes no index page at random for them. A run stored before
 * keeps them in {@code records}, found by that table's key {@code (run_id, kind, seq)}. Every read
 * of a run's records goes through these fragments, which read both layouts alike (columns {@code
 * address, run_id, kind, seq, envelope}); the fleet outbox alone reads both tables whole, by rowid.
 * {@code RunTable.write} is the only writer.
 */
final class RecordRows {
  private RecordRows() {}

  /**
   * Migration 23: the table, and each run's range in it (null: the run's records are in {@code
   * records}). Idempotent (SQLite has no ADD COLUMN IF NOT EXISTS): migration 2, which audits the
   * runs already stored through these reads, adds it first.
   */
  static void addTable(Connection db) throws SQLException {
    try (Statement st = db.createStatement()) {
      st.execute(
          "CREATE TABLE IF NOT EXISTS run_records (id INTEGER PRIMARY KEY, address TEXT NOT NULL,"
              + " run_id TEXT NOT NULL, kind TEXT NOT NULL, seq INTEGER NOT NULL,"
              + " envelope NOT NULL)");
      for (String column : List.of("records_at", "records_n")) {
        if (!StoreSchema.hasColumn(db, "runs", column)) {
          st.execute("ALTER TABLE runs ADD COLUMN " + column + " INTEGER");
        }
      }
    }
  }

  /**
   * A single-step run's records: its segment, receipt and attestation (a claim is kept apart), at
   * consecutive ids from its {@code records_at}. Its {@code records_n} says the same and is written
   * for the daemons of schema 23 that read the range by it; no read here does, so the unsigned
   * column, edited, cannot widen what a read takes in.
   */
  static final int PER_RUN = 3;

  private static final String COLUMNS = "address, run_id, kind, seq, envelope";

  /** One record in, at the id bound first (null: the table's next), answering the id it took. */
  static final String INSERT =
      "INSERT INTO run_records (id, " + COLUMNS + ") VALUES (?,?,?,?,?,?) RETURNING id";

  /**
   * The rows of {@code run_records} in the range of the runs row aliased {@code u}, and only those
   * that name its run (a range edited to take in another run's rows takes in nothing). SQLite's
   * planner, with no statistics, would rather build a throwaway index on {@code run_id} than read
   * the range: the CROSS JOIN keeps {@code u} outside and the unary plus keeps {@code run_id} from
   * being indexed ({@code RecordRowsTest} holds every query to its plan).
   */
  private static String inRange(String u) {
    return " CROSS JOIN run_records x ON x.id BETWEEN "
        + u
        + ".records_at AND "
        + u
        + ".records_at + "
        + (PER_RUN - 1)
        + " AND +x.run_id = "
        + u
        + ".run_id";
  }

  /**
   * The records of the run whose id is bound to parameter {@code ?1}, as a FROM term. A query using
   * it numbers its other parameters from {@code ?2}, and a filter on the term's columns takes a
   * unary plus, for the reason {@link #inRange} gives.
   */
  static final String OF_RUN_ID =
      "(SELECT "
          + COLUMNS
          + " FROM records WHERE run_id = ?1 UNION ALL SELECT x.address, x.run_id, x.kind, x.seq,"
          + " x.envelope FROM runs u"
          + inRange("u")
          + " WHERE u.run_id = ?1)";

  /**
   * A scalar subquery over the records of the runs row aliased {@code r} in the enclosing query:
   * {@code select} over the rows of its layout only that match {@code where} (SQLite evaluates a
   * CASE's branches lazily, so an old run costs no probe of the new table and a new one none of the
   * old key). Columns in {@code where} take a unary plus, for the reason {@link #inRange} gives.
   */
  static String ofRow(String r, String select, String where, String tail) {
    return "(CASE WHEN "
        + r
        + ".records_at IS NULL THEN (SELECT "
        + select
        + " FROM records WHERE run_id = "
        + r
        + ".run_id AND "
        + where
        + tail
        + ") ELSE (SELECT "
        + select
        + " FROM run_records WHERE id BETWEEN "
        + r
        + ".records_at AND "
        + r
        + ".records_at + "
        + (PER_RUN - 1)
        + " AND +run_id = "
        + r
        + ".run_id AND "
        + where
        + tail
        + ") END)";
  }

  /**
   * The records of the runs whose ledger rows (aliased {@code l}) match {@code ledgerWhere}, as a
   * FROM term with the ledger position first: {@code position, run_id, address, kind, seq,
   * envelope}. Parameters in {@code ledgerWhere} must be numbered ({@code ?1}), as it appears
   * twice.
   */
  static String byLedger(String ledgerWhere) {
    return "(SELECT l.position, s.run_id, s.address, s.kind, s.seq, s.envelope FROM ledger l"
        + " JOIN records s ON s.run_id = l.run_id WHERE "
        + ledgerWhere
        + " UNION ALL SELECT l.position, x.run_id, x.address, x.kind, x.seq, x.envelope"
        + " FROM ledger l CROSS JOIN runs u ON u.run_id = l.run_id"
        + inRange("u")
        + " WHERE "
        + ledgerWhere
        + ")";
  }
}
