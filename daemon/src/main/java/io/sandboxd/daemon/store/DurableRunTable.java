package io.sandboxd.daemon.store;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;

/**
 * Durable runs (WIRE.md §2.6) in the run store: each run's state, its segments of every kind in seq
 * order (signed by this node or, for an imported run, by the hosts it ran on before), their
 * receipts and attestations, the unit's log per segment, and one row per resumed suspend so that a
 * suspend is resumed at most once. Every change is one transaction, committed (fsynced: the store
 * runs with {@code synchronous=FULL}) before it returns. Kept apart from the single-step runs'
 * ledger: a durable run grows after it is first stored and may carry other hosts' signatures.
 */
public final class DurableRunTable {
  static final List<String> DDL =
      List.of(
          "CREATE TABLE IF NOT EXISTS durable_runs (run_id TEXT PRIMARY KEY,"
              + " state TEXT NOT NULL, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,"
              + " unit TEXT NOT NULL, module BLOB NOT NULL, grants TEXT NOT NULL,"
              + " grants_id TEXT NOT NULL, entry TEXT NOT NULL, env TEXT NOT NULL,"
              + " outcome TEXT NOT NULL, exported INTEGER NOT NULL, imported INTEGER NOT NULL)",
          "CREATE TABLE IF NOT EXISTS durable_segments (run_id TEXT NOT NULL,"
              + " seq INTEGER NOT NULL, address TEXT NOT NULL, envelope TEXT NOT NULL,"
              + " log TEXT NOT NULL, PRIMARY KEY (run_id, seq))",
          "CREATE TABLE IF NOT EXISTS durable_records (run_id TEXT NOT NULL,"
              + " address TEXT NOT NULL, envelope TEXT NOT NULL, PRIMARY KEY (run_id, address))",
          "CREATE TABLE IF NOT EXISTS durable_resumed (suspend TEXT PRIMARY KEY,"
              + " run_id TEXT NOT NULL, resumed_ms INTEGER NOT NULL)",
          "CREATE INDEX IF NOT EXISTS durable_runs_by_time ON durable_runs (created_ms)");

  /** Where a durable run stands. */
  public enum State {
    running,
    parked,
    /** A bundle is being exported and not yet confirmed written: neither resumable nor moved. */
    exporting,
    moved,
    completed,
    failed,
    terminated;

    /** Whether the run will not change on this node again. */
    public boolean settled() {
      return this != running;
    }
  }

  /** A durable run's row. */
  public record Run(
      String runId,
      State state,
      long createdMs,
      long updatedMs,
      String unit,
      String grantsJson,
      String grantsId,
      String entry,
      String env,
      String outcomeJson,
      boolean exported,
      boolean imported) {}

  /** One segment and the log the unit wrote during it (empty but for execute segments). */
  public record Segment(Envelope envelope, String log) {}

  private final RunStore owner;
  private final StoreDb store;
  private final Connection db;

  private final ExportHandoffTable handoffs;
  private final DurableBlobs blobs;

  DurableRunTable(RunStore owner, StoreDb store) {
    this.owner = owner;
    this.store = store;
    this.db = store.connection();
    this.handoffs = new ExportHandoffTable(store);
    this.blobs = new DurableBlobs(store);
  }

  /** The export hand-off of exporting runs. */
  public ExportHandoffTable handoffs() {
    return handoffs;
  }

  /** The snapshot blobs each run refers to. */
  public DurableBlobs blobs() {
    return blobs;
  }

  /** A change of one run, applied in one transaction. */
  public record Change(
      String runId,
      List<Segment> segments,
      List<Envelope> records,
      State state,
      String outcomeJson,
      Optional<String> resumedSuspend) {}

  /**
   * Stores a new run with its first segments; false (nothing stored) when the node already holds a
   * run with this id, durable or not.
   */
  public boolean insert(Run run, byte[] module, List<Segment> segments, List<Envelope> records) {
    return insert(run, module, segments, records, null);
  }

  /** As above, recording in the same transaction the snapshot blobs (address → size) it holds. */
  public boolean insert(
      Run run,
      byte[] module,
      List<Segment> segments,
      List<Envelope> records,
      java.util.Map<String, Long> snapshotBlobs) {
    return appending(
        run.runId(),
        snapshotBlobs,
        "run " + run.runId() + ": cannot store",
        c -> {
          if (held(run.runId())) {
            c.commit();
            return false;
          }
          StoreDb.update(
              c,
              "INSERT INTO durable_runs (run_id, state, created_ms, updated_ms, unit, module,"
                  + " grants, grants_id, entry, env, outcome, exported, imported)"
                  + " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
              run.runId(),
              run.state().name(),
              run.createdMs(),
              run.updatedMs(),
              run.unit(),
              module,
              run.grantsJson(),
              run.grantsId(),
              run.entry(),
              run.env(),
              run.outcomeJson(),
              run.exported() ? 1 : 0,
              run.imported() ? 1 : 0);
          insertSegments(run.runId(), segments, records);
          return true;
        });
  }

  /**
   * Appends segments and records and sets the state, in one transaction. With {@code
   * resumedSuspend}, also takes that suspend's resumed-once guard: false (nothing changed) when it
   * was taken before.
   */
  public boolean apply(Change c) {
    return apply(c, null);
  }

  /**
   * As above, and with {@code snapshotBlobs} (address → size) the blobs the run refers to from now
   * on (a park), recorded in the same transaction.
   */
  public boolean apply(Change c, java.util.Map<String, Long> snapshotBlobs) {
    return appending(
        c.runId(),
        snapshotBlobs,
        "run " + c.runId() + ": cannot append",
        tx -> {
          if (c.resumedSuspend().isPresent()) {
            if (StoreDb.update(
                    tx,
                    "INSERT OR IGNORE INTO durable_resumed (suspend, run_id, resumed_ms)"
                        + " VALUES (?,?,?)",
                    c.resumedSuspend().get(),
                    c.runId(),
                    System.currentTimeMillis())
                == 0) {
              tx.rollback();
              return false;
            }
          }
          insertSegments(c.runId(), c.segments(), c.records());
          if (StoreDb.update(
                  tx,
                  "UPDATE durable_runs SET state = ?, outcome = ?, updated_ms = ? WHERE run_id = ?",
                  c.state().name(),
                  c.outcomeJson(),
                  System.currentTimeMillis(),
                  c.runId())
              != 1) {
            throw new SQLException("no durable run " + c.runId());
          }
          return true;
        });
  }

  /**
   * Runs {@code work}, which appends a run's segments to the node log and ledger, in one
   * transaction, then records {@code snapshotBlobs} (when not null) and commits; false when the
   * work changed nothing (it ended its transaction). A failure rolls the rows back, resets the log
   * and ledger kept beside them, and becomes a store error naming {@code what}.
   */
  private boolean appending(
      String runId,
      java.util.Map<String, Long> snapshotBlobs,
      String what,
      StoreDb.Work<Boolean> work) {
    synchronized (owner) {
      NodeLog.Mark before = owner.logMark();
      StoreLedger.Mark ledgerBefore = owner.ledgerMark();
      try {
        if (!work.apply(db)) {
          return false;
        }
        if (snapshotBlobs != null) {
          DurableBlobs.replace(db, runId, snapshotBlobs);
        }
        db.commit();
        return true;
      } catch (SQLException | RuntimeException e) {
        owner.logReset(before);
        owner.ledgerReset(ledgerBefore);
        throw store.rolledBack(what, e);
      }
    }
  }

  /** Whether {@code suspendAddress} was resumed on this node. */
  public boolean resumed(String suspendAddress) {
    return store.read(
        "durable runs: query failed",
        c ->
            StoreDb.first(
                    c,
                    "SELECT 1 FROM durable_resumed WHERE suspend = ?",
                    rs -> true,
                    suspendAddress)
                .isPresent());
  }

  /**
   * Marks a parked run exported (state {@code moved}): this node will not resume it again. False
   * when it is not parked here (running, settled, or exported already).
   */
  public boolean markExported(String runId) {
    return store.write(
        "run " + runId + ": cannot mark exported",
        c ->
            StoreDb.update(
                    c,
                    "UPDATE durable_runs SET state = 'moved', exported = 1, updated_ms = ?"
                        + " WHERE run_id = ? AND state = 'parked' AND exported = 0",
                    System.currentTimeMillis(),
                    runId)
                == 1);
  }

  /**
   * Moves a run from state {@code from} to {@code to} (an export's hand-off: parked → exporting →
   * moved, or back to parked), {@code moved} marking it exported; fsynced. False when the run is
   * not in {@code from}.
   */
  public boolean transition(String runId, State from, State to) {
    return store.write(
        "run " + runId + ": cannot move from " + from + " to " + to,
        c ->
            StoreDb.update(
                    c,
                    "UPDATE durable_runs SET state = ?, exported = ?, updated_ms = ?"
                        + " WHERE run_id = ? AND state = ? AND exported = 0",
                    to.name(),
                    to == State.moved ? 1 : 0,
                    System.currentTimeMillis(),
                    runId,
                    from.name())
                == 1);
  }

  /** Replaces the grants in force of a run (an accepted amendment, WIRE.md §2.11); fsynced. */
  public void setGrants(String runId, String grantsJson, String grantsId) {
    store.write(
        "run " + runId + ": cannot store amended grants",
        c ->
            StoreDb.update(
                c,
                "UPDATE durable_runs SET grants = ?, grants_id = ?, updated_ms = ? WHERE run_id = ?",
                grantsJson,
                grantsId,
                System.currentTimeMillis(),
                runId));
  }

  /** Sets the state of runs left {@code running} by a daemon that stopped; returns their ids. */
  public List<String> settleInterrupted(String outcomeJson) {
    return store.write(
        "durable runs: cannot settle interrupted runs",
        c -> {
          List<String> ids =
              StoreDb.all(
                  c,
                  "SELECT run_id FROM durable_runs WHERE state = 'running'",
                  rs -> rs.getString(1));
          StoreDb.update(
              c,
              "UPDATE durable_runs SET state = 'failed', outcome = ? WHERE state = 'running'",
              outcomeJson);
          return ids;
        });
  }

  public Optional<Run> run(String runId) {
    List<Run> l = query("WHERE run_id = ?", runId, 1);
    return l.isEmpty() ? Optional.empty() : Optional.of(l.get(0));
  }

  /** The newest {@code limit} durable runs, newest first. */
  public List<Run> list(int limit) {
    return query("", null, limit);
  }

  private List<Run> query(String where, String arg, int limit) {
    synchronized (owner) {
      try {
        List<Run> out =
            StoreDb.all(
                db,
                "SELECT run_id, state, created_ms, updated_ms, unit, grants, grants_id, entry, env,"
                    + " outcome, exported, imported FROM durable_runs "
                    + where
                    + " ORDER BY created_ms DESC, run_id DESC LIMIT ?",
                rs ->
                    new Run(
                        rs.getString(1),
                        State.valueOf(rs.getString(2)),
                        rs.getLong(3),
                        rs.getLong(4),
                        rs.getString(5),
                        rs.getString(6),
                        rs.getString(7),
                        rs.getString(8),
                        rs.getString(9),
                        rs.getString(10),
                        rs.getInt(11) != 0,
                        rs.getInt(12) != 0),
                arg == null ? new Object[] {limit} : new Object[] {arg, limit});
        db.commit();
        return out;
      } catch (SQLException | IllegalArgumentException e) {
        throw store.rolledBack("durable runs: query failed", e);
      }
    }
  }

  /** The run's module bytes. */
  public byte[] module(String runId) {
    // A NULL module reads as none, as no row does.
    List<byte[]> l =
        store.read(
            "durable runs: query failed",
            c ->
                StoreDb.all(
                    c,
                    "SELECT module FROM durable_runs WHERE run_id = ?",
                    rs -> rs.getBytes(1),
                    runId));
    if (l.isEmpty() || l.get(0) == null) {
      throw new StoreException("durable run " + runId + ": no module stored");
    }
    return l.get(0);
  }

  /** The run's segments in seq order, each with the log of its step. */
  public List<Segment> segments(String runId) {
    return rows(
        runId,
        "SELECT envelope, log FROM durable_segments WHERE run_id = ? ORDER BY seq",
        rs -> new Segment(envelope(rs.getString(1)), rs.getString(2)));
  }

  /** The run's receipts and attestations, in the order they were stored. */
  public List<Envelope> records(String runId) {
    return rows(
        runId,
        "SELECT envelope FROM durable_records WHERE run_id = ? ORDER BY rowid",
        rs -> envelope(rs.getString(1)));
  }

  /**
   * The rows of run {@code runId} that {@code sql} selects, each read by {@code row}; a failed
   * query or an envelope that does not parse becomes a store error naming the run.
   */
  private <T> List<T> rows(String runId, String sql, StoreDb.Row<T> row) {
    synchronized (owner) {
      try {
        List<T> out = StoreDb.all(db, sql, row, runId);
        db.commit();
        return out;
      } catch (SQLException | AttestException e) {
        throw store.rolledBack("durable run " + runId + ": cannot read", e);
      }
    }
  }

  /** Whether a run with this id is held, durable or single-step. */
  private boolean held(String runId) throws SQLException {
    for (String sql :
        new String[] {
          "SELECT 1 FROM durable_runs WHERE run_id = ?", "SELECT 1 FROM runs WHERE run_id = ?"
        }) {
      if (StoreDb.first(db, sql, rs -> true, runId).isPresent()) {
        return true;
      }
    }
    return false;
  }

  /** Whether the node holds a run with this id, durable or single-step. */
  public boolean holds(String runId) {
    return store.read("durable runs: query failed", c -> held(runId));
  }

  private void insertSegments(String runId, List<Segment> segments, List<Envelope> records)
      throws SQLException {
    try (PreparedStatement st =
        db.prepareStatement(
            "INSERT INTO durable_segments (run_id, seq, address, envelope, log)"
                + " VALUES (?,?,?,?,?)")) {
      for (Segment s : segments) {
        st.setString(1, runId);
        st.setLong(2, s.envelope().core().get("seq").longValue());
        st.setString(3, s.envelope().address());
        st.setString(4, s.envelope().toJsonLine());
        st.setString(5, s.log());
        st.executeUpdate();
      }
    }
    try (PreparedStatement st =
        db.prepareStatement(
            "INSERT OR IGNORE INTO durable_records (run_id, address, envelope) VALUES (?,?,?)")) {
      for (Envelope e : records) {
        st.setString(1, runId);
        st.setString(2, e.address());
        st.setString(3, e.toJsonLine());
        st.executeUpdate();
      }
    }
    // In the node log with the records themselves: committed together or not at all.
    owner.logOwn(segments.stream().map(Segment::envelope).toList());
    // And in the signed store head, so deleting a segment or a run is detected (issue 23).
    owner.ledgerDurable(runId, segments.stream().map(Segment::envelope).toList());
    owner.logOwn(records);
  }

  private static Envelope envelope(String json) {
    return Envelope.fromJson(CanonicalJson.parse(json));
  }
}
