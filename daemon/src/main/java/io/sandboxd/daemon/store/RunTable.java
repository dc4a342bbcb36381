package io.sandboxd.daemon.store;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.StoredRun;
import io.sandboxd.attest.Verification;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * Single-step runs: their rows, signed records, journals, blobs, modules, WASI io and submitters,
 * written in the append's transaction and chained into the ledger; and every read of them, each
 * checked against the node's key before it is shown.
 */
final class RunTable {
  private final StoreDb store;
  private final PublicKey signer;
  private final NodeLog log;
  private final StoreLedger ledger;
  // Runs found damaged (at start-up or by the verifier): listed as tampered, never with their
  // stored values. Guarded by the store's lock.
  private final Map<String, String> damaged = new LinkedHashMap<>();
  // Stored runs by outcome kind: counted from the table once, when first asked, then kept by each
  // commit (a runs row is never deleted; retention empties it and keeps it), so a status call does
  // not scan every run. Null until counted. Guarded by the store's lock.
  private Map<String, Long> outcomes;

  RunTable(StoreDb store, PublicKey signer, NodeLog log, StoreLedger ledger) {
    this.store = store;
    this.signer = signer;
    this.log = log;
    this.ledger = ledger;
  }

  /** A run's signed records in their stored form ({@link StoreEncoding}), made off the lock. */
  record Encoded(
      byte[] segment,
      byte[] receipt,
      byte[] attestation,
      Optional<byte[]> claim,
      String grantsAddress) {
    static Encoded of(RunRecord r) {
      return new Encoded(
          StoreEncoding.encode(r.segment()),
          StoreEncoding.encode(r.receipt()),
          StoreEncoding.encode(r.attestation()),
          r.claim().map(StoreEncoding::encode),
          StoredRun.textAddress(r.grantsJson()));
    }
  }

  /**
   * Writes one run's rows and ledger record into the open transaction (lock held); {@code e} is its
   * records encoded.
   */
  void write(RunRecord r, Encoded e) throws SQLException {
    PreparedStatement run =
        store.prepared(
            "INSERT INTO runs (run_id, created_ms, unit, grants_id, outcome, log, grants, entry,"
                + " uid, position, records_at, records_n) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
    run.setString(1, r.runId());
    run.setLong(2, r.createdMs());
    run.setString(3, r.unit());
    run.setString(4, r.grantsId());
    run.setString(5, r.outcomeJson());
    run.setString(6, r.log());
    run.setString(7, GrantsTexts.store(store, r.grantsId(), r.grantsJson(), e.grantsAddress()));
    run.setString(8, r.entry());
    if (r.submitterUid().isPresent()) {
      run.setLong(9, r.submitterUid().getAsLong());
    } else {
      run.setNull(9, java.sql.Types.INTEGER);
    }
    // The position its store record takes below: how the run's ledger record is found.
    run.setLong(10, ledger.size());
    long seq = r.segment().core().get("seq").longValue();
    // Its records at consecutive ids from the table's next, in the same transaction: the run's
    // row names the first, which is how they are found.
    long at = insertRecord(0, r.runId(), RecordKind.SEGMENT, seq, r.segment(), e.segment());
    insertRecord(at + 1, r.runId(), RecordKind.RECEIPT, seq, r.receipt(), e.receipt());
    insertRecord(at + 2, r.runId(), RecordKind.ATTESTATION, seq, r.attestation(), e.attestation());
    run.setLong(11, at);
    run.setLong(12, RecordRows.PER_RUN);
    run.executeUpdate();
    log.appendOnce(NodeLog.SEGMENT, r.segment().address());
    log.appendOnce(NodeLog.RECEIPT, r.receipt().address());
    log.appendOnce(NodeLog.ATTESTATION, r.attestation().address());
    if (!r.journalEntries().isEmpty()) {
      PreparedStatement j =
          store.prepared("INSERT INTO journal (run_id, seq, entry) VALUES (?,?,?)");
      for (int i = 0; i < r.journalEntries().size(); i++) {
        j.setString(1, r.runId());
        j.setLong(2, i);
        j.setString(3, r.journalEntries().get(i));
        j.addBatch();
      }
      j.executeBatch();
    }
    if (!r.blobs().isEmpty()) {
      PreparedStatement b =
          store.prepared("INSERT OR IGNORE INTO blobs (address, bytes) VALUES (?,?)");
      for (Map.Entry<String, byte[]> blob : r.blobs().entrySet()) {
        b.setString(1, blob.getKey());
        b.setBytes(2, blob.getValue());
        b.addBatch();
      }
      b.executeBatch();
    }
    insertModule(r.unit(), r.module());
    if (r.claim().isPresent()) {
      PoolRecordTable.insertClaim(store, r.runId(), r.claim().get(), e.claim().orElseThrow());
      log.appendOnce(NodeLog.CLAIM, r.claim().get().address());
    }
    if (r.io() != null) {
      insertIo(r.runId(), r.io());
    }
    appendToLedger(r, e.grantsAddress());
  }

  /**
   * Chains the run's store record into the ledger, in the append's transaction (the batch's head is
   * signed before it commits): a run is stored with it or not at all.
   */
  private void appendToLedger(RunRecord r, String grantsAddress) throws SQLException {
    StoredRun stored =
        new StoredRun(
            ledger.size(),
            r.runId(),
            r.createdMs(),
            r.unit(),
            r.grantsId(),
            Attestation.outcomeOf(r.attestation().core()),
            r.entry(),
            grantsAddress,
            StoredRun.textAddress(r.log()),
            StoredRun.textBytes(r.log()),
            r.segment().address(),
            r.receipt().address(),
            r.attestation().address());
    if (!CanonicalJson.canonicalString(stored.outcome().toJson()).equals(r.outcomeJson())) {
      throw new StoreException("run " + r.runId() + ": outcome differs from its attestation's");
    }
    // Not a node-log leaf: the store record is chained, not signed (the head is signed per batch).
    ledger.append(stored);
  }

  /**
   * Stores a unit's bytes once: a run of a module already held binds only its address, so a large
   * module is not copied into SQLite on every run. The lookup runs in the append's transaction, so
   * a rolled-back insert or a retention delete is seen, not remembered.
   */
  private void insertModule(String unit, byte[] module) throws SQLException {
    PreparedStatement held = store.prepared("SELECT 1 FROM modules WHERE address = ?");
    held.setString(1, unit);
    try (ResultSet rs = held.executeQuery()) {
      if (rs.next()) {
        return;
      }
    }
    PreparedStatement m =
        store.prepared("INSERT OR IGNORE INTO modules (address, bytes) VALUES (?,?)");
    m.setString(1, unit);
    m.setBytes(2, module);
    m.executeUpdate();
  }

  private void insertIo(String runId, RunIo io) throws SQLException {
    RunIo.Stream out = RunIo.Stream.of(io.stdout());
    RunIo.Stream err = RunIo.Stream.of(io.stderr());
    Optional<byte[]> stdin = io.stdin();
    PreparedStatement st =
        store.prepared(
            "INSERT INTO run_io (run_id, args, stdin, stdin_bytes, stdout, stdout_bytes,"
                + " stdout_written, stdout_kept, stderr, stderr_bytes, stderr_written, stderr_kept,"
                + " exit_status, exited) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    com.fasterxml.jackson.databind.node.ArrayNode args = CanonicalJson.mapper().createArrayNode();
    io.args().forEach(args::add);
    st.setString(1, runId);
    st.setString(2, CanonicalJson.canonicalString(args));
    st.setString(3, stdin.map(Blake3::hex).orElse(null));
    st.setLong(4, stdin.map(b -> (long) b.length).orElse(0L));
    st.setString(5, out.address());
    st.setLong(6, out.bytes());
    st.setLong(7, out.written());
    st.setInt(8, out.kept() ? 1 : 0);
    st.setString(9, err.address());
    st.setLong(10, err.bytes());
    st.setLong(11, err.written());
    st.setInt(12, err.kept() ? 1 : 0);
    st.setInt(13, io.exitStatus());
    st.setInt(14, io.exited() ? 1 : 0);
    st.executeUpdate();
    PreparedStatement b =
        store.prepared("INSERT OR IGNORE INTO io_blobs (address, bytes) VALUES (?,?)");
    for (byte[] bytes :
        stdin.isPresent()
            ? List.of(stdin.get(), io.stdout().bytes(), io.stderr().bytes())
            : List.of(io.stdout().bytes(), io.stderr().bytes())) {
      b.setString(1, Blake3.hex(bytes));
      b.setBytes(2, bytes);
      b.addBatch();
    }
    b.executeBatch();
  }

  /** Appends one record at {@code id}, or at the table's next id when {@code id} is 0; its id. */
  private long insertRecord(
      long id, String runId, RecordKind kind, long seq, Envelope env, byte[] stored)
      throws SQLException {
    PreparedStatement st = store.prepared(RecordRows.INSERT);
    if (id == 0) {
      st.setNull(1, java.sql.Types.INTEGER);
    } else {
      st.setLong(1, id);
    }
    st.setString(2, env.address());
    st.setString(3, runId);
    st.setString(4, kind.stored());
    st.setLong(5, seq);
    st.setBytes(6, stored);
    try (ResultSet rs = st.executeQuery()) {
      if (!rs.next()) {
        throw new SQLException("run_records: an insert answered no id");
      }
      return rs.getLong(1);
    }
  }

  // ---- reads --------------------------------------------------------------------------------

  Optional<RunIo.Stored> io(String runId) {
    return store.firstRow(
        "run " + runId + ": cannot read its io",
        "SELECT args, stdin, stdin_bytes, stdout, stdout_bytes, stdout_written,"
            + " stdout_kept, stderr, stderr_bytes, stderr_written, stderr_kept,"
            + " exit_status, exited FROM run_io WHERE run_id = ?",
        rs -> {
          List<String> args = new ArrayList<>();
          CanonicalJson.parse(rs.getString(1)).forEach(n -> args.add(n.textValue()));
          return new RunIo.Stored(
              args,
              Optional.ofNullable(rs.getString(2)),
              rs.getLong(3),
              new RunIo.Stream(rs.getString(4), rs.getLong(5), rs.getLong(6), rs.getInt(7) != 0),
              new RunIo.Stream(rs.getString(8), rs.getLong(9), rs.getLong(10), rs.getInt(11) != 0),
              rs.getInt(12),
              rs.getInt(13) != 0);
        },
        runId);
  }

  Optional<byte[]> ioBlob(String runId, String address) {
    Optional<byte[]> bytes =
        store.transact(
            "run " + runId + ": cannot read io blob",
            db -> bytesAt(db, "SELECT bytes FROM io_blobs WHERE address = ?", address));
    if (bytes.isPresent() && !Blake3.hex(bytes.get()).equals(address)) {
      throw new TamperedRunException(runId, "io blob " + address + " does not hash to its address");
    }
    return bytes;
  }

  Optional<byte[]> module(String address) {
    Optional<byte[]> bytes =
        store.transact(
            "module " + address + ": cannot read",
            db -> bytesAt(db, "SELECT bytes FROM modules WHERE address = ?", address));
    if (bytes.isPresent() && !Blake3.hex(bytes.get()).equals(address)) {
      throw new StoreException("module " + address + ": stored bytes do not match its address");
    }
    return bytes;
  }

  private static Optional<byte[]> bytesAt(Connection db, String sql, String key)
      throws SQLException {
    return StoreDb.first(db, sql, rs -> rs.getBytes(1), key);
  }

  OptionalLong submitter(String runId) {
    return store
        .firstRow(
            "run store: query failed",
            "SELECT uid FROM runs WHERE run_id = ? AND uid IS NOT NULL",
            rs -> OptionalLong.of(rs.getLong(1)),
            runId)
        .orElse(OptionalLong.empty());
  }

  /**
   * Runs matching {@code where} (one {@code ?} bound to {@code arg}, if not null), newest first.
   */
  List<RunSummary> query(String where, String arg, int limit) {
    String sql =
        "SELECT "
            + StoreAudit.ROW_COLUMNS
            + ", l.envelope"
            + " FROM runs r LEFT JOIN ledger l ON l.position = r.position"
            + " AND l.run_id = r.run_id "
            + where
            + " ORDER BY r.created_ms DESC, r.run_id DESC LIMIT ?";
    return store.transact(
        "run store: query failed",
        db -> {
          try (PreparedStatement st = db.prepareStatement(sql)) {
            int i = 1;
            if (arg != null) {
              st.setString(i++, arg);
            }
            st.setInt(i, limit);
            List<RunSummary> out = new ArrayList<>();
            try (ResultSet rs = st.executeQuery()) {
              while (rs.next()) {
                StoreAudit.RunRow row = StoreAudit.row(rs, 1);
                Optional<String> why = damage(row, rs.getBytes(12));
                out.add(
                    why.isPresent()
                        ? RunSummary.tampered(row.runId(), why.get())
                        : new RunSummary(
                            row.runId(),
                            row.createdMs(),
                            row.unit(),
                            row.grantsId(),
                            row.outcome(),
                            row.segments(),
                            row.head(),
                            row.log(),
                            Optional.empty()));
              }
            }
            return out;
          }
        });
  }

  /**
   * Why a row must not be shown: damage found at start-up, or a column its record does not sign.
   */
  private Optional<String> damage(StoreAudit.RunRow row, byte[] ledgerEnvelope) {
    String known = damaged.get(row.runId());
    if (known != null) {
      return Optional.of(known);
    }
    return StoreAudit.checkRow(row, ledgerEnvelope, signer).map(StoreDamage::toString);
  }

  /** Throws {@link TamperedRunException} unless the run's row checks against its signed record. */
  private void requireIntact(Connection db, String runId) throws SQLException {
    byte[] ledgerEnvelope =
        StoreDb.first(
                db,
                "SELECT l.envelope FROM runs r JOIN ledger l ON l.position = r.position"
                    + " AND l.run_id = r.run_id WHERE r.run_id = ?",
                rs -> rs.getBytes(1),
                runId)
            .orElse(null);
    for (StoreAudit.RunRow row : StoreAudit.rows(db, runId)) {
      Optional<String> why = damage(row, ledgerEnvelope);
      if (why.isPresent()) {
        throw new TamperedRunException(runId, why.get());
      }
    }
  }

  /** The envelopes of run {@code ?1}'s records of kind {@code ?2}, by sequence. */
  static final String RECORDS_OF_KIND =
      "SELECT envelope FROM " + RecordRows.OF_RUN_ID + " WHERE +kind = ?2 ORDER BY seq";

  List<Envelope> records(String runId, RecordKind kind) {
    return store.transact(
        "run " + runId + ": cannot read records",
        db -> {
          List<Envelope> out =
              StoreDb.all(
                  db,
                  RECORDS_OF_KIND,
                  rs -> storedEnvelope(runId, kind, rs.getBytes(1)),
                  runId,
                  kind.stored());
          for (Envelope e : out) {
            if (e.verify(Optional.of(signer)) instanceof Verification.Invalid inv) {
              throw new TamperedRunException(runId, kind + " " + e.address() + ": " + inv.reason());
            }
          }
          requireIntact(db, runId);
          return out;
        });
  }

  /** A record's envelope from its stored bytes; bytes that do not decode are damage. */
  private static Envelope storedEnvelope(String runId, RecordKind kind, byte[] stored) {
    try {
      return StoreEncoding.envelope(stored);
    } catch (StoreEncodingException e) {
      throw new TamperedRunException(runId, kind + ": " + e.getMessage());
    }
  }

  Optional<RunStore.Submission> submission(String runId) {
    return store.transact(
        "run " + runId + ": cannot read submission",
        db -> {
          requireIntact(db, runId);
          String grants;
          String entry;
          String unit;
          String grantsId;
          try (PreparedStatement st =
              db.prepareStatement(
                  "SELECT grants, entry, unit, grants_id FROM runs WHERE run_id = ?")) {
            st.setString(1, runId);
            try (ResultSet rs = st.executeQuery()) {
              if (!rs.next()) {
                return Optional.empty();
              }
              grants = rs.getString(1);
              entry = rs.getString(2);
              unit = rs.getString(3);
              grantsId = rs.getString(4);
            }
          }
          grants = GrantsTexts.require(db, runId, grantsId, grants);
          byte[] module =
              bytesAt(db, "SELECT bytes FROM modules WHERE address = ?", unit).orElse(new byte[0]);
          List<String> journal = new ArrayList<>();
          Map<String, byte[]> blobs = new LinkedHashMap<>();
          try (PreparedStatement st =
              db.prepareStatement(
                  "SELECT j.entry, b.address, b.bytes FROM journal j LEFT JOIN blobs b"
                      + " ON b.address = json_extract(j.entry, '$.response')"
                      + " WHERE j.run_id = ? ORDER BY j.seq")) {
            st.setString(1, runId);
            try (ResultSet rs = st.executeQuery()) {
              while (rs.next()) {
                journal.add(rs.getString(1));
                if (rs.getString(2) != null) {
                  blobs.put(rs.getString(2), rs.getBytes(3));
                }
              }
            }
          }
          return Optional.of(new RunStore.Submission(runId, module, grants, entry, journal, blobs));
        });
  }

  List<String> journal(String runId) {
    return store.transact(
        "run " + runId + ": cannot read journal",
        db ->
            StoreDb.all(
                db,
                "SELECT entry FROM journal WHERE run_id = ? ORDER BY seq",
                rs -> rs.getString(1),
                runId));
  }

  /** How many stored runs end in each outcome kind. */
  Map<String, Long> runsByOutcome() {
    synchronized (store.lock()) {
      if (outcomes == null) {
        outcomes = countOutcomes();
      }
      return new TreeMap<>(outcomes);
    }
  }

  /** Counts runs just committed (lock held); before the first count there is nothing to keep. */
  void committed(List<RunRecord> stored) {
    if (outcomes != null) {
      for (RunRecord r : stored) {
        outcomes.merge(outcomeKind(r.outcomeJson()), 1L, Long::sum);
      }
    }
  }

  /**
   * The kind of a canonical outcome: a bare string ({@code "Completed"}) or the one member of an
   * object ({@code {"Terminated":{...}}}), as {@link #countOutcomes} reads it in SQL.
   */
  static String outcomeKind(String outcomeJson) {
    if (outcomeJson.startsWith("\"")) {
      int from = 0;
      int to = outcomeJson.length();
      while (from < to && outcomeJson.charAt(from) == '"') {
        from++;
      }
      while (to > from && outcomeJson.charAt(to - 1) == '"') {
        to--;
      }
      return outcomeJson.substring(from, to);
    }
    int end = outcomeJson.indexOf("\":");
    return end < 2 ? "" : outcomeJson.substring(2, end);
  }

  private Map<String, Long> countOutcomes() {
    return store.transact(
        "run store: cannot count runs",
        db -> {
          Map<String, Long> out = new TreeMap<>();
          try (Statement st = db.createStatement();
              ResultSet rs =
                  st.executeQuery(
                      "SELECT CASE WHEN substr(outcome, 1, 1) = '\"' THEN trim(outcome, '\"')"
                          + " ELSE substr(outcome, 3, instr(outcome, '\":') - 3) END, COUNT(*)"
                          + " FROM runs GROUP BY 1")) {
            while (rs.next()) {
              out.put(rs.getString(1), rs.getLong(2));
            }
          }
          return out;
        });
  }

  int count() {
    return store.transact(
        "run store: count failed",
        db -> {
          try (Statement st = db.createStatement();
              ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM runs")) {
            rs.next();
            return rs.getInt(1);
          }
        });
  }

  /**
   * Remembers damaged runs, so they are listed as tampered; {@code replace} forgets older finds.
   */
  void remember(List<StoreDamage> found, boolean replace) {
    synchronized (store.lock()) {
      if (replace) {
        damaged.clear();
      }
      for (StoreDamage d : found) {
        if (!d.runId().equals(StoreDamage.STORE)) {
          damaged.putIfAbsent(d.runId(), d.toString());
        }
      }
    }
  }
}
