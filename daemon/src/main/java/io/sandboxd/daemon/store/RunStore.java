package io.sandboxd.daemon.store;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.StoreCheckpoint;
import io.sandboxd.attest.StoreHead;
import io.sandboxd.attest.StoredRun;
import io.sandboxd.attest.Verification;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.logging.Logger;

/**
 * The node's durable run store: SQLite in WAL mode with {@code synchronous=FULL}, so a commit is
 * fsynced before {@link #append} returns and nothing is acknowledged that is not on disk; appends
 * that arrive together share one commit (group commit).
 */
public final class RunStore implements AutoCloseable {
  private final Connection db;
  private final Path file;
  private final SigningKey key;
  private final Map<String, String> damaged = new LinkedHashMap<>();

  private final NodeLog log;
  private final StoreLedger ledger;

  private RunStore(Path file, Connection db, SigningKey key) throws SQLException {
    this.file = file;
    this.db = db;
    this.key = key;
    this.ledger = StoreLedger.open(db);
    this.log =
        new NodeLog(
            db,
            new NodeLog.Policy(
                "sandboxd/" + key.publicKey().hex().substring(0, 16), 1024, 1000, true));
    db.commit();
  }

  /**
   * Opens (creating if needed) the store at {@code file}, mode 0600, and brings its schema to the
   * latest version (see {@link StoreSchema}); a store written by a newer sandboxd is refused.
   * {@code key} signs each run's store record and the store head as they are appended (and the runs
   * of a store upgraded from before the ledger, once verified), and is the key they are checked
   * against.
   */
  public static RunStore open(Path file, SigningKey key) {
    try {
      Files.createDirectories(file.toAbsolutePath().getParent());
      if (!Files.exists(file)) {
        Files.createFile(
            file,
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      }
      Connection db = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
      try (Statement st = db.createStatement()) {
        st.execute("PRAGMA journal_mode=WAL");
        st.execute("PRAGMA synchronous=FULL");
        st.execute("PRAGMA foreign_keys=ON");
        st.execute("PRAGMA busy_timeout=5000");
      }
      db.setAutoCommit(false);
      try {
        StoreSchema.migrate(db, key, file);
      } catch (StoreException e) {
        db.close();
        throw e;
      }
      return new RunStore(file, db, key);
    } catch (SQLException | IOException e) {
      throw new StoreException("run store " + file + ": cannot open: " + e.getMessage(), e);
    }
  }

  public Path file() {
    return file;
  }

  private DurableRunTable durable;
  private RunOwners owners;

  /** Who owns each run (issue 23), on the store's connection and lock. */
  public synchronized RunOwners owners() {
    if (owners == null) {
      owners = new RunOwners(this, db);
    }
    return owners;
  }

  /** The durable runs held in this store (issue 12), on the store's connection and lock. */
  public synchronized DurableRunTable durable() {
    if (durable == null) {
      durable = new DurableRunTable(this, db);
    }
    return durable;
  }

  private volatile java.util.function.LongConsumer appendTimer = nanos -> {};

  /** Hears how long each durable commit took (ns, fsync included): for the daemon's metrics. */
  public void onAppend(java.util.function.LongConsumer timer) {
    appendTimer = timer;
  }

  /**
   * Appends several runs' records in one fsynced transaction (all or none); returns once durable.
   * Tools that fill a store use it; the daemon appends one run at a time through {@link #append}.
   */
  public synchronized void appendAll(List<RunRecord> records) {
    if (records.isEmpty()) {
      return;
    }
    RunRecord last = records.get(records.size() - 1);
    long t0 = System.nanoTime();
    NodeLog.Mark before = log.mark();
    StoreLedger.Mark ledgerBefore = ledger.mark();
    try {
      for (RunRecord r : records) {
        write(r);
      }
      ledger.signHead(key);
      checkpointLogIfDue();
      db.commit();
      appendTimer.accept(System.nanoTime() - t0);
    } catch (SQLException | RuntimeException e) {
      try {
        db.rollback();
      } catch (SQLException suppressed) {
        e.addSuppressed(suppressed);
      }
      log.reset(before);
      ledger.reset(ledgerBefore);
      String what = records.size() == 1 ? "run " + last.runId() : records.size() + " runs";
      throw new StoreException(what + ": not stored: " + e.getMessage(), e);
    }
    applyRetention(last.runId());
  }

  /** One caller's run waiting for the commit of the batch that takes it. */
  private static final class PendingAppend {
    final RunRecord record;
    // Both guarded by the store's monitor: set by the committing thread before it releases it.
    boolean done;
    StoreException failure;

    PendingAppend(RunRecord record) {
      this.record = record;
    }
  }

  /** Most runs one commit takes (bounds how long one transaction holds the store). */
  static final int DEFAULT_MAX_BATCH = 256;

  private final ConcurrentLinkedQueue<PendingAppend> pending = new ConcurrentLinkedQueue<>();
  private int maxBatch = DEFAULT_MAX_BATCH;
  private long commits;
  private long committedRuns;

  /**
   * Appends one run's records; returns once they are durable. Group commit: runs appended while
   * another commit is in progress are written together in the next transaction, one fsync for the
   * batch, each in its own savepoint so that a run that cannot be stored fails alone. Each caller
   * returns only after the commit that holds its run, and a failure is its own run's.
   *
   * @throws StoreException when this run was not stored
   */
  public void append(RunRecord r) {
    PendingAppend mine = new PendingAppend(r);
    pending.add(mine);
    synchronized (this) {
      // Whoever holds the monitor commits everything queued, so by the time a waiting caller gets
      // it, its run has usually been committed by the previous holder.
      while (!mine.done) {
        commitBatch();
      }
    }
    if (mine.failure != null) {
      throw mine.failure;
    }
    applyRetentionIfDue(r);
  }

  /**
   * Sets how many runs one commit takes at most; 1 turns group commit off (one transaction and one
   * fsync per run, as before it), for measuring what batching gains.
   */
  public synchronized void maxBatch(int runs) {
    if (runs < 1) {
      throw new IllegalArgumentException("a batch holds at least one run: " + runs);
    }
    maxBatch = runs;
  }

  /** Commits made by appends so far and the runs they stored: their ratio is the batch size. */
  public record CommitStats(long commits, long runs) {}

  public synchronized CommitStats commitStats() {
    return new CommitStats(commits, committedRuns);
  }

  // Called with the monitor held.
  private void commitBatch() {
    List<PendingAppend> batch = new ArrayList<>();
    for (PendingAppend p; batch.size() < maxBatch && (p = pending.poll()) != null; ) {
      batch.add(p);
    }
    if (batch.isEmpty()) {
      return;
    }
    int stored = 0;
    long t0 = System.nanoTime();
    NodeLog.Mark before = log.mark();
    StoreLedger.Mark ledgerBefore = ledger.mark();
    try {
      for (PendingAppend p : batch) {
        Savepoint sp = db.setSavepoint();
        NodeLog.Mark runMark = log.mark();
        StoreLedger.Mark ledgerMark = ledger.mark();
        try {
          write(p.record);
          db.releaseSavepoint(sp);
          stored++;
        } catch (SQLException | RuntimeException e) {
          // Undo this run only; the rest of the batch goes on.
          db.rollback(sp);
          db.releaseSavepoint(sp);
          log.reset(runMark);
          ledger.reset(ledgerMark);
          p.failure = notStored(p.record, e);
        }
      }
      if (stored > 0) {
        // One signature for the batch: the head covers every run in it through the chain.
        ledger.signHead(key);
      }
      checkpointLogIfDue();
      db.commit();
      appendTimer.accept(System.nanoTime() - t0);
      commits++;
      committedRuns += stored;
    } catch (SQLException | RuntimeException e) {
      try {
        db.rollback();
      } catch (SQLException suppressed) {
        e.addSuppressed(suppressed);
      }
      log.reset(before);
      ledger.reset(ledgerBefore);
      for (PendingAppend p : batch) {
        if (p.failure == null) {
          p.failure = notStored(p.record, e);
        }
      }
    } finally {
      for (PendingAppend p : batch) {
        p.done = true;
      }
    }
  }

  private static StoreException notStored(RunRecord r, Exception e) {
    return new StoreException("run " + r.runId() + ": not stored: " + e.getMessage(), e);
  }

  /** Writes one run's rows, ledger record and store head into the open transaction. */
  private void write(RunRecord r) throws SQLException {
    try (PreparedStatement run =
        db.prepareStatement(
            "INSERT INTO runs (run_id, created_ms, unit, grants_id, outcome, log, grants, entry)"
                + " VALUES (?,?,?,?,?,?,?,?)")) {
      run.setString(1, r.runId());
      run.setLong(2, r.createdMs());
      run.setString(3, r.unit());
      run.setString(4, r.grantsId());
      run.setString(5, r.outcomeJson());
      run.setString(6, r.log());
      run.setString(7, r.grantsJson());
      run.setString(8, r.entry());
      run.executeUpdate();
    }
    long seq = r.segment().core().get("seq").longValue();
    insertRecord(r.runId(), RecordKind.SEGMENT, seq, r.segment());
    insertRecord(r.runId(), RecordKind.RECEIPT, seq, r.receipt());
    insertRecord(r.runId(), RecordKind.ATTESTATION, seq, r.attestation());
    log.append(NodeLog.SEGMENT, r.segment().address());
    log.append(NodeLog.RECEIPT, r.receipt().address());
    log.append(NodeLog.ATTESTATION, r.attestation().address());
    try (PreparedStatement j =
        db.prepareStatement("INSERT INTO journal (run_id, seq, entry) VALUES (?,?,?)")) {
      for (int i = 0; i < r.journalEntries().size(); i++) {
        j.setString(1, r.runId());
        j.setLong(2, i);
        j.setString(3, r.journalEntries().get(i));
        j.addBatch();
      }
      j.executeBatch();
    }
    try (PreparedStatement b =
        db.prepareStatement("INSERT OR IGNORE INTO blobs (address, bytes) VALUES (?,?)")) {
      for (Map.Entry<String, byte[]> e : r.blobs().entrySet()) {
        b.setString(1, e.getKey());
        b.setBytes(2, e.getValue());
        b.addBatch();
      }
      b.executeBatch();
    }
    try (PreparedStatement m =
        db.prepareStatement("INSERT OR IGNORE INTO modules (address, bytes) VALUES (?,?)")) {
      m.setString(1, r.unit());
      m.setBytes(2, r.module());
      m.executeUpdate();
    }
    if (r.claim().isPresent()) {
      PoolRecordTable.insertClaim(db, r.runId(), r.claim().get());
      log.append(NodeLog.CLAIM, r.claim().get().address());
    }
    if (r.io() != null) {
      insertIo(r.runId(), r.io());
    }
    if (r.submitterUid().isPresent()) {
      try (PreparedStatement u =
          db.prepareStatement("INSERT INTO submitters (run_id, uid) VALUES (?,?)")) {
        u.setString(1, r.runId());
        u.setLong(2, r.submitterUid().getAsLong());
        u.executeUpdate();
      }
    }
    appendToLedger(r);
  }

  /**
   * How much bulky run data (journals, blobs, logs, module bytes) the store keeps: past {@code
   * maxBytes} of used store pages, beyond the newest {@code maxRuns} runs, or older than {@code
   * maxAgeMs}, the oldest runs' bulky data is pruned. 0 means no bound for runs and age.
   */
  public record Retention(long maxBytes, long maxRuns, long maxAgeMs) {
    public static final Retention NONE = new Retention(Long.MAX_VALUE, 0, 0);
  }

  /** A run whose bulky data retention removed: when, and why. */
  public record Pruned(long prunedMs, String reason) {}

  private static final Logger LOG = Logger.getLogger(RunStore.class.getName());
  private volatile Retention retention = Retention.NONE;

  /** Sets the retention and applies it now; later appends apply it too. */
  public synchronized void retain(Retention r) {
    retention = r;
    applyRetention(null);
  }

  /** Runs appended between two retention checks at most, and the most time between them. */
  static final int RETENTION_EVERY_RUNS = 64;

  static final long RETENTION_EVERY_MS = 1_000;

  private final java.util.concurrent.atomic.AtomicLong runsSinceRetention =
      new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong bytesSinceRetention =
      new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicBoolean retaining =
      new java.util.concurrent.atomic.AtomicBoolean();
  private volatile long lastRetentionMs;

  /**
   * Retention after an append, when it is due: once {@link #RETENTION_EVERY_RUNS} runs, a 64th of
   * {@code max_bytes}, or {@link #RETENTION_EVERY_MS} have been appended since the last check. A
   * check costs queries under the store's monitor, so it is not paid on every run; the bounds
   * overshoot by at most that much. One caller applies it while the others go on.
   */
  private void applyRetentionIfDue(RunRecord r) {
    Retention rt = retention;
    if (rt == Retention.NONE) {
      return;
    }
    long runs = runsSinceRetention.incrementAndGet();
    long bytes = bytesSinceRetention.addAndGet(approxBytes(r));
    long now = System.currentTimeMillis();
    if (runs < RETENTION_EVERY_RUNS
        && bytes < Math.max(1, rt.maxBytes() / 64)
        && now - lastRetentionMs < RETENTION_EVERY_MS) {
      return;
    }
    if (!retaining.compareAndSet(false, true)) {
      return;
    }
    try {
      runsSinceRetention.set(0);
      bytesSinceRetention.set(0);
      lastRetentionMs = now;
      applyRetention(r.runId());
    } finally {
      retaining.set(false);
    }
  }

  /** The bulky bytes a run adds (what retention prunes), roughly. */
  private static long approxBytes(RunRecord r) {
    long n = 4096L + r.log().length() + r.grantsJson().length();
    for (String e : r.journalEntries()) {
      n += e.length();
    }
    for (byte[] b : r.blobs().values()) {
      n += b.length;
    }
    return n;
  }

  // After the run is durable: a failure here never takes back an acknowledged run.
  private void applyRetention(String newest) {
    try {
      prune(retention, System.currentTimeMillis(), newest);
    } catch (StoreException e) {
      LOG.warning("run store: retention not applied: " + e.getMessage());
    }
  }

  /**
   * Prunes the bulky data of the oldest runs until {@code r} holds (never {@code keep}'s, the run
   * just stored); returns how many runs were pruned. Signed records and the run rows stay, so every
   * chain still verifies and a pruned run is shown as pruned, not as missing.
   */
  public synchronized int prune(Retention r, long nowMs, String keep) {
    int n = 0;
    try {
      List<String> due = new ArrayList<>();
      if (r.maxRuns() > 0) {
        due.addAll(
            ids(
                "SELECT run_id FROM runs WHERE run_id NOT IN (SELECT run_id FROM pruned)"
                    + " ORDER BY created_ms DESC, run_id DESC LIMIT -1 OFFSET "
                    + r.maxRuns()));
      }
      if (r.maxAgeMs() > 0) {
        due.addAll(
            ids(
                "SELECT run_id FROM runs WHERE run_id NOT IN (SELECT run_id FROM pruned)"
                    + " AND created_ms < "
                    + Math.max(0, nowMs - r.maxAgeMs())));
      }
      for (String id : new java.util.LinkedHashSet<>(due)) {
        if (!id.equals(keep)) {
          pruneRun(id, nowMs, r.maxRuns() > 0 ? "store.max_runs" : "store.max_age_ms");
          n++;
        }
      }
      while (usedBytes() > r.maxBytes()) {
        List<String> oldest =
            ids(
                "SELECT run_id FROM runs WHERE run_id NOT IN (SELECT run_id FROM pruned)"
                    + " ORDER BY created_ms, run_id LIMIT 2");
        oldest.remove(keep);
        if (oldest.isEmpty()) {
          break;
        }
        pruneRun(oldest.get(0), nowMs, "store.max_bytes");
        n++;
      }
      return n;
    } catch (SQLException e) {
      try {
        db.rollback();
      } catch (SQLException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new StoreException("run store: pruning failed: " + e.getMessage(), e);
    }
  }

  private void pruneRun(String runId, long nowMs, String reason) throws SQLException {
    // Blobs only this run's journal references, then the journal, the log, and the module
    // bytes no other unpruned run needs.
    List<String> responses = new ArrayList<>();
    try (PreparedStatement st =
        db.prepareStatement(
            "SELECT DISTINCT json_extract(entry, '$.response') FROM journal WHERE run_id = ?")) {
      st.setString(1, runId);
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          responses.add(rs.getString(1));
        }
      }
    }
    // One indexed probe per blob (a correlated subquery would not use the expression index).
    try (PreparedStatement used =
            db.prepareStatement(
                "SELECT 1 FROM journal WHERE json_extract(entry, '$.response') = ?"
                    + " AND run_id <> ? LIMIT 1");
        PreparedStatement delete = db.prepareStatement("DELETE FROM blobs WHERE address = ?")) {
      for (String address : responses) {
        used.setString(1, address);
        used.setString(2, runId);
        boolean shared;
        try (ResultSet rs = used.executeQuery()) {
          shared = rs.next();
        }
        if (!shared) {
          delete.setString(1, address);
          delete.executeUpdate();
        }
      }
    }
    exec("DELETE FROM journal WHERE run_id = ?1", runId);
    exec("UPDATE runs SET log = '' WHERE run_id = ?1", runId);
    // A WASI command's stdin and outputs, unless another unpruned run names the same bytes.
    exec(
        "DELETE FROM io_blobs WHERE address IN (SELECT stdin FROM run_io WHERE run_id = ?1"
            + " UNION SELECT stdout FROM run_io WHERE run_id = ?1"
            + " UNION SELECT stderr FROM run_io WHERE run_id = ?1)"
            + " AND NOT EXISTS (SELECT 1 FROM run_io o WHERE o.run_id <> ?1"
            + " AND o.run_id NOT IN (SELECT run_id FROM pruned)"
            + " AND (o.stdin = io_blobs.address OR o.stdout = io_blobs.address"
            + " OR o.stderr = io_blobs.address))",
        runId);
    exec(
        "INSERT OR REPLACE INTO pruned (run_id, pruned_ms, reason) VALUES (?1, " + nowMs + ", ?2)",
        runId,
        reason);
    exec(
        "DELETE FROM modules WHERE address = (SELECT unit FROM runs WHERE run_id = ?1)"
            + " AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.unit = modules.address"
            + " AND r.run_id NOT IN (SELECT run_id FROM pruned))",
        runId);
    db.commit();
  }

  private void exec(String sql, String... args) throws SQLException {
    try (PreparedStatement st = db.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        st.setString(i + 1, args[i]);
      }
      st.executeUpdate();
    }
  }

  private List<String> ids(String sql) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  /** Bytes of store pages in use (freed pages are reused before the file grows). */
  private long usedBytes() throws SQLException {
    try (Statement st = db.createStatement()) {
      long pages = longPragma(st, "page_count");
      long free = longPragma(st, "freelist_count");
      return (pages - free) * longPragma(st, "page_size");
    }
  }

  private static long longPragma(Statement st, String name) throws SQLException {
    try (ResultSet rs = st.executeQuery("PRAGMA " + name)) {
      return rs.next() ? rs.getLong(1) : 0;
    }
  }

  /** Whether, when and why retention pruned this run's bulky data. */
  public synchronized Optional<Pruned> pruned(String runId) {
    try (PreparedStatement st =
        db.prepareStatement("SELECT pruned_ms, reason FROM pruned WHERE run_id = ?")) {
      st.setString(1, runId);
      Optional<Pruned> out;
      try (ResultSet rs = st.executeQuery()) {
        out =
            rs.next() ? Optional.of(new Pruned(rs.getLong(1), rs.getString(2))) : Optional.empty();
      }
      db.commit();
      return out;
    } catch (SQLException e) {
      throw new StoreException("run " + runId + ": cannot read pruning: " + e.getMessage(), e);
    }
  }

  /**
   * Chains the run's store record into the ledger, in the append's transaction (the batch's head is
   * signed before it commits): a run is stored with it or not at all.
   */
  private void appendToLedger(RunRecord r) throws SQLException {
    long position = ledger.size();
    StoredRun stored =
        new StoredRun(
            position,
            r.runId(),
            r.createdMs(),
            r.unit(),
            r.grantsId(),
            Attestation.fromCore(r.attestation().core()).outcome(),
            r.entry(),
            StoredRun.textAddress(r.grantsJson()),
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

  private void insertIo(String runId, RunIo io) throws SQLException {
    RunIo.Stream out = RunIo.Stream.of(io.stdout());
    RunIo.Stream err = RunIo.Stream.of(io.stderr());
    Optional<byte[]> stdin = io.stdin();
    try (PreparedStatement st =
        db.prepareStatement(
            "INSERT INTO run_io (run_id, args, stdin, stdin_bytes, stdout, stdout_bytes,"
                + " stdout_written, stdout_kept, stderr, stderr_bytes, stderr_written, stderr_kept,"
                + " exit_status, exited) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)")) {
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
    }
    try (PreparedStatement b =
        db.prepareStatement("INSERT OR IGNORE INTO io_blobs (address, bytes) VALUES (?,?)")) {
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
  }

  /** A WASI command's stored inputs and outputs by address; empty for a unit without WASI. */
  public synchronized Optional<RunIo.Stored> io(String runId) {
    try (PreparedStatement st =
        db.prepareStatement(
            "SELECT args, stdin, stdin_bytes, stdout, stdout_bytes, stdout_written, stdout_kept,"
                + " stderr, stderr_bytes, stderr_written, stderr_kept, exit_status, exited"
                + " FROM run_io WHERE run_id = ?")) {
      st.setString(1, runId);
      Optional<RunIo.Stored> out = Optional.empty();
      try (ResultSet rs = st.executeQuery()) {
        if (rs.next()) {
          List<String> args = new ArrayList<>();
          CanonicalJson.parse(rs.getString(1)).forEach(n -> args.add(n.textValue()));
          out =
              Optional.of(
                  new RunIo.Stored(
                      args,
                      Optional.ofNullable(rs.getString(2)),
                      rs.getLong(3),
                      new RunIo.Stream(
                          rs.getString(4), rs.getLong(5), rs.getLong(6), rs.getInt(7) != 0),
                      new RunIo.Stream(
                          rs.getString(8), rs.getLong(9), rs.getLong(10), rs.getInt(11) != 0),
                      rs.getInt(12),
                      rs.getInt(13) != 0));
        }
      }
      db.commit();
      return out;
    } catch (SQLException | AttestException e) {
      throw new StoreException("run " + runId + ": cannot read its io: " + e.getMessage(), e);
    }
  }

  /**
   * The bytes stored under {@code address} (stdin, stdout or stderr of some run), checked against
   * it; empty when retention pruned them.
   */
  public synchronized Optional<byte[]> ioBlob(String runId, String address) {
    try (PreparedStatement st =
        db.prepareStatement("SELECT bytes FROM io_blobs WHERE address = ?")) {
      st.setString(1, address);
      byte[] bytes = null;
      try (ResultSet rs = st.executeQuery()) {
        if (rs.next()) {
          bytes = rs.getBytes(1);
        }
      }
      db.commit();
      if (bytes != null && !Blake3.hex(bytes).equals(address)) {
        throw new TamperedRunException(
            runId, "io blob " + address + " does not hash to its address");
      }
      return Optional.ofNullable(bytes);
    } catch (SQLException e) {
      throw new StoreException("run " + runId + ": cannot read io blob: " + e.getMessage(), e);
    }
  }

  private void insertRecord(String runId, RecordKind kind, long seq, Envelope env)
      throws SQLException {
    try (PreparedStatement st =
        db.prepareStatement(
            "INSERT INTO records (address, run_id, kind, seq, envelope) VALUES (?,?,?,?,?)")) {
      st.setString(1, env.address());
      st.setString(2, runId);
      st.setString(3, kind.stored());
      st.setLong(4, seq);
      st.setString(5, env.toJsonLine());
      st.executeUpdate();
    }
  }

  /** The bytes of a module some stored run ran, checked against its address; empty if none. */
  public synchronized Optional<byte[]> module(String address) {
    try (PreparedStatement st =
        db.prepareStatement("SELECT bytes FROM modules WHERE address = ?")) {
      st.setString(1, address);
      byte[] bytes = null;
      try (ResultSet rs = st.executeQuery()) {
        if (rs.next()) {
          bytes = rs.getBytes(1);
        }
      }
      db.commit();
      if (bytes != null && !io.sandboxd.attest.Blake3.hex(bytes).equals(address)) {
        throw new StoreException("module " + address + ": stored bytes do not match its address");
      }
      return Optional.ofNullable(bytes);
    } catch (SQLException e) {
      throw new StoreException("module " + address + ": cannot read: " + e.getMessage(), e);
    }
  }

  /** Work on the store's connection inside one transaction. */
  @FunctionalInterface
  interface Work<T> {
    T apply(Connection db) throws SQLException;
  }

  /**
   * Runs {@code work} in one transaction under the store's lock and commits it (fsynced before it
   * returns), or rolls it back and throws naming {@code what}.
   */
  synchronized <T> T transact(String what, Work<T> work) {
    try {
      T out = work.apply(db);
      db.commit();
      return out;
    } catch (SQLException | RuntimeException e) {
      try {
        db.rollback();
      } catch (SQLException suppressed) {
        e.addSuppressed(suppressed);
      }
      if (e instanceof StoreException se) {
        throw se;
      }
      throw new StoreException(what + ": " + e.getMessage(), e);
    }
  }

  /** Stores signed warm-pool eviction records in one fsynced transaction. */
  public synchronized void appendEvictions(List<Envelope> evictions) {
    NodeLog.Mark before = log.mark();
    try {
      for (Envelope e : evictions) {
        PoolRecordTable.insertEviction(db, e);
        log.append(NodeLog.EVICTION, e.address());
      }
      db.commit();
    } catch (SQLException | RuntimeException e) {
      try {
        db.rollback();
      } catch (SQLException suppressed) {
        e.addSuppressed(suppressed);
      }
      log.reset(before);
      throw new StoreException("warm-pool evictions not stored: " + e.getMessage(), e);
    }
  }

  /** The run's signed warm-pool claim (verified), or empty for a run that started cold. */
  public synchronized Optional<Envelope> claim(String runId) {
    try {
      Optional<Envelope> c = PoolRecordTable.claim(db, runId);
      db.commit();
      if (c.isPresent()
          && c.get().verify(Optional.of(key.publicKey())) instanceof Verification.Invalid inv) {
        throw new TamperedRunException(
            runId, "warm-pool claim " + c.get().address() + ": " + inv.reason());
      }
      return c;
    } catch (SQLException | AttestException e) {
      throw new StoreException("run " + runId + ": cannot read its claim: " + e.getMessage(), e);
    }
  }

  /** The newest {@code limit} signed eviction records, oldest first. */
  public synchronized List<Envelope> evictions(int limit) {
    try {
      List<Envelope> out = PoolRecordTable.evictions(db, limit);
      db.commit();
      return out;
    } catch (SQLException | AttestException e) {
      throw new StoreException("cannot read warm-pool evictions: " + e.getMessage(), e);
    }
  }

  /** The uid that submitted {@code runId}, when the daemon knew it (runs before this: empty). */
  public synchronized java.util.OptionalLong submitter(String runId) {
    try (PreparedStatement st =
        db.prepareStatement("SELECT uid FROM submitters WHERE run_id = ?")) {
      st.setString(1, runId);
      java.util.OptionalLong out = java.util.OptionalLong.empty();
      try (ResultSet rs = st.executeQuery()) {
        if (rs.next()) {
          out = java.util.OptionalLong.of(rs.getLong(1));
        }
      }
      db.commit();
      return out;
    } catch (SQLException e) {
      throw new StoreException("run store: query failed: " + e.getMessage(), e);
    }
  }

  /** The run as its signed records say, or marked tampered; empty for an unknown run. */
  public synchronized Optional<RunSummary> run(String runId) {
    List<RunSummary> l = query("WHERE r.run_id = ?", runId, 1);
    return l.isEmpty() ? Optional.empty() : Optional.of(l.get(0));
  }

  /** The newest {@code limit} runs, newest first, each checked as {@link #run} does. */
  public synchronized List<RunSummary> list(int limit) {
    return query("", null, limit);
  }

  private List<RunSummary> query(String where, String arg, int limit) {
    String sql =
        "SELECT "
            + StoreAudit.ROW_COLUMNS
            + ", l.envelope"
            + " FROM runs r LEFT JOIN ledger l ON l.run_id = r.run_id "
            + where
            + " ORDER BY r.created_ms DESC, r.run_id DESC LIMIT ?";
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
          Optional<String> why = damage(row, rs.getString(12));
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
      db.commit();
      return out;
    } catch (SQLException e) {
      throw new StoreException("run store: query failed: " + e.getMessage(), e);
    }
  }

  /**
   * Why a row must not be shown: damage found at start-up, or a column its record does not sign.
   */
  private Optional<String> damage(StoreAudit.RunRow row, String ledgerEnvelope) {
    String known = damaged.get(row.runId());
    if (known != null) {
      return Optional.of(known);
    }
    return StoreAudit.checkRow(row, ledgerEnvelope, key.publicKey()).map(StoreDamage::toString);
  }

  /** Throws {@link TamperedRunException} unless the run's row checks against its signed record. */
  private void requireIntact(String runId) throws SQLException {
    String ledgerEnvelope = null;
    try (PreparedStatement st =
        db.prepareStatement("SELECT envelope FROM ledger WHERE run_id = ?")) {
      st.setString(1, runId);
      try (ResultSet rs = st.executeQuery()) {
        if (rs.next()) {
          ledgerEnvelope = rs.getString(1);
        }
      }
    }
    for (StoreAudit.RunRow row : StoreAudit.rows(db, runId)) {
      Optional<String> why = damage(row, ledgerEnvelope);
      if (why.isPresent()) {
        db.commit();
        throw new TamperedRunException(runId, why.get());
      }
    }
  }

  /**
   * A run's envelopes of one kind, by seq; throws {@link TamperedRunException} if one does not
   * verify or the run does not check.
   */
  public synchronized List<Envelope> records(String runId, RecordKind kind) {
    try (PreparedStatement st =
        db.prepareStatement(
            "SELECT envelope FROM records WHERE run_id = ? AND kind = ? ORDER BY seq")) {
      st.setString(1, runId);
      st.setString(2, kind.stored());
      List<Envelope> out = new ArrayList<>();
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          out.add(Envelope.fromJson(CanonicalJson.parse(rs.getString(1))));
        }
      }
      for (Envelope e : out) {
        if (e.verify(Optional.of(key.publicKey())) instanceof Verification.Invalid inv) {
          db.commit();
          throw new TamperedRunException(runId, kind + " " + e.address() + ": " + inv.reason());
        }
      }
      requireIntact(runId);
      db.commit();
      return out;
    } catch (SQLException | AttestException e) {
      throw new StoreException("run " + runId + ": cannot read records: " + e.getMessage(), e);
    }
  }

  /** What a replay needs: the submission and the recorded journal with its blobs. */
  public record Submission(
      String runId,
      byte[] module,
      String grantsJson,
      String entry,
      List<String> journal,
      Map<String, byte[]> blobs) {}

  /** The run's submission and journal, or empty for an unknown run. */
  public synchronized Optional<Submission> submission(String runId) {
    try {
      requireIntact(runId);
      String grants;
      String entry;
      String unit;
      try (PreparedStatement st =
          db.prepareStatement("SELECT grants, entry, unit FROM runs WHERE run_id = ?")) {
        st.setString(1, runId);
        try (ResultSet rs = st.executeQuery()) {
          if (!rs.next()) {
            db.commit();
            return Optional.empty();
          }
          grants = rs.getString(1);
          entry = rs.getString(2);
          unit = rs.getString(3);
        }
      }
      byte[] module;
      try (PreparedStatement st =
          db.prepareStatement("SELECT bytes FROM modules WHERE address = ?")) {
        st.setString(1, unit);
        try (ResultSet rs = st.executeQuery()) {
          module = rs.next() ? rs.getBytes(1) : new byte[0];
        }
      }
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
      db.commit();
      return Optional.of(new Submission(runId, module, grants, entry, journal, blobs));
    } catch (SQLException e) {
      throw new StoreException("run " + runId + ": cannot read submission: " + e.getMessage(), e);
    }
  }

  /** The run's journal entries in order (canonical JSON). */
  public synchronized List<String> journal(String runId) {
    try (PreparedStatement st =
        db.prepareStatement("SELECT entry FROM journal WHERE run_id = ? ORDER BY seq")) {
      st.setString(1, runId);
      List<String> out = new ArrayList<>();
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
      db.commit();
      return out;
    } catch (SQLException e) {
      throw new StoreException("run " + runId + ": cannot read journal: " + e.getMessage(), e);
    }
  }

  /**
   * Checks the whole store against the node's signed records (see {@link StoreAudit}) and remembers
   * the damaged runs, so that they are listed as tampered and never with their stored values.
   * Called at start: a damaged store is reported, never repaired by dropping records.
   */
  public synchronized List<StoreDamage> verifyAll() {
    try {
      List<StoreDamage> found = StoreAudit.audit(db, key.publicKey());
      db.commit();
      remember(found, true);
      return found;
    } catch (SQLException e) {
      throw new StoreException("run store: cannot verify: " + e.getMessage(), e);
    }
  }

  /** What start-up verified: the sealed checkpoint it started from, and the runs after it. */
  public record StartupCheck(
      List<StoreDamage> damage, long checkpointRuns, long verifiedRuns, long headRuns) {}

  /**
   * The start-up check, whose cost does not grow with the store's history: the signed store head
   * (run count, dense positions, the hash chain extended from the sealed checkpoint's) and every
   * run after the checkpoint, fully; runs before it were checked when it was sealed (and are again
   * by {@link StoreVerifier} in the background). A clean check seals a new checkpoint at the head.
   * A store without a checkpoint (new, or upgraded) is checked from genesis once. A checkpoint that
   * does not verify is damage, and the whole store is checked.
   */
  public synchronized StartupCheck verifyFromCheckpoint() {
    try {
      List<StoreDamage> found = new ArrayList<>();
      StoreAudit.Start from = StoreAudit.Start.GENESIS;
      try {
        Optional<StoreCheckpoint> cp = checkpoint();
        if (cp.isPresent()) {
          from = new StoreAudit.Start(cp.get().runs(), cp.get().chain());
        }
      } catch (StoreException e) {
        found.add(new StoreDamage(StoreDamage.STORE, "store_checkpoint", e.getMessage()));
      }
      StoreAudit.Result r = StoreAudit.audit(db, key.publicKey(), from, null);
      db.commit();
      found.addAll(r.damage());
      remember(found, true);
      if (found.isEmpty() && r.checked() > 0) {
        seal(r.ledgerSize(), r.chain());
      }
      return new StartupCheck(found, from.position(), r.checked(), r.ledgerSize());
    } catch (SQLException e) {
      throw new StoreException("run store: cannot verify: " + e.getMessage(), e);
    }
  }

  /**
   * Remembers damaged runs, so they are listed as tampered; {@code replace} forgets older finds.
   */
  synchronized void remember(List<StoreDamage> found, boolean replace) {
    if (replace) {
      damaged.clear();
    }
    for (StoreDamage d : found) {
      if (!d.runId().equals(StoreDamage.STORE)) {
        damaged.putIfAbsent(d.runId(), d.toString());
      }
    }
  }

  /**
   * The sealed checkpoint, verified against the node's key; empty when none was sealed yet. One
   * that does not verify throws {@link StoreException}.
   */
  public synchronized Optional<StoreCheckpoint> checkpoint() {
    String text = null;
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("SELECT envelope FROM store_checkpoint WHERE id = 1")) {
      if (rs.next()) {
        text = rs.getString(1);
      }
      db.commit();
    } catch (SQLException e) {
      throw new StoreException("run store: cannot read its checkpoint: " + e.getMessage(), e);
    }
    if (text == null) {
      return Optional.empty();
    }
    try {
      Envelope env = Envelope.fromJson(CanonicalJson.parse(text));
      if (env.verify(Optional.of(key.publicKey())) instanceof Verification.Invalid inv) {
        throw new StoreException("the sealed checkpoint does not verify: " + inv.reason());
      }
      return Optional.of(StoreCheckpoint.fromCore(env.core()));
    } catch (AttestException e) {
      throw new StoreException("the sealed checkpoint is unreadable: " + e.getMessage(), e);
    }
  }

  /**
   * Seals a checkpoint: every run before ledger position {@code runs} verified, their chain {@code
   * chain}. Never moves it back; returns whether it moved.
   */
  synchronized boolean seal(long runs, String chain) {
    long current;
    try {
      current = checkpoint().map(StoreCheckpoint::runs).orElse(-1L);
    } catch (StoreException e) {
      current = -1; // a damaged checkpoint is replaced by one a clean check sealed
    }
    if (runs <= current) {
      return false;
    }
    StoreCheckpoint cp = new StoreCheckpoint(runs, chain, System.currentTimeMillis());
    NodeLog.Mark before = log.mark();
    try (PreparedStatement st =
        db.prepareStatement(
            "INSERT OR REPLACE INTO store_checkpoint (id, envelope) VALUES (1, ?)")) {
      Envelope env = Envelope.sign(cp.toCore(), key);
      st.setString(1, env.toJsonLine());
      st.executeUpdate();
      log.append(NodeLog.STORE_CHECKPOINT, env.address());
      db.commit();
      return true;
    } catch (SQLException e) {
      try {
        db.rollback();
      } catch (SQLException suppressed) {
        e.addSuppressed(suppressed);
      }
      log.reset(before);
      throw new StoreException("run store: cannot seal a checkpoint: " + e.getMessage(), e);
    }
  }

  /** A second, read-only connection to the store, for checks that must not hold up appends. */
  Connection openReader() throws SQLException {
    org.sqlite.SQLiteConfig c = new org.sqlite.SQLiteConfig();
    c.setReadOnly(true);
    c.setBusyTimeout(5000);
    Connection reader =
        DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath(), c.toProperties());
    reader.setAutoCommit(false);
    return reader;
  }

  /** The node's public key, which every record in the store must verify under. */
  io.sandboxd.attest.PublicKey signer() {
    return key.publicKey();
  }

  /** Bytes of the store's database file and its write-ahead log. */
  public long sizeBytes() {
    long n = 0;
    for (Path p : List.of(file, file.resolveSibling(file.getFileName() + "-wal"))) {
      try {
        n += Files.size(p);
      } catch (IOException e) {
        // absent (no WAL yet): nothing to count
      }
    }
    return n;
  }

  /** How many stored runs end in each outcome kind ("Completed", "Terminated", ...). */
  public synchronized Map<String, Long> runsByOutcome() {
    Map<String, Long> out = new java.util.TreeMap<>();
    try (Statement st = db.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT CASE WHEN substr(outcome, 1, 1) = '\"' THEN trim(outcome, '\"')"
                    + " ELSE substr(outcome, 3, instr(outcome, '\":') - 3) END, COUNT(*)"
                    + " FROM runs GROUP BY 1")) {
      while (rs.next()) {
        out.put(rs.getString(1), rs.getLong(2));
      }
      db.commit();
      return out;
    } catch (SQLException e) {
      throw new StoreException("run store: cannot count runs: " + e.getMessage(), e);
    }
  }

  /** The signed store head's line for the log: run count and chain, or none for an empty store. */
  public synchronized String headLine() {
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("SELECT envelope FROM store_head WHERE id = 1")) {
      String line = "no signed head (empty store)";
      if (rs.next()) {
        Envelope env = Envelope.fromJson(CanonicalJson.parse(rs.getString(1)));
        StoreHead h = StoreHead.fromCore(env.core());
        line = "head " + env.address() + " (" + h.runs() + " runs, chain " + h.chain() + ")";
      }
      db.commit();
      return line;
    } catch (SQLException | AttestException e) {
      throw new StoreException("run store: cannot read its head: " + e.getMessage(), e);
    }
  }

  /** How many runs the signed store head counts (0 for an empty store); O(1), not verified. */
  public synchronized long headRuns() {
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("SELECT envelope FROM store_head WHERE id = 1")) {
      long n = 0;
      if (rs.next()) {
        n = StoreHead.fromCore(CanonicalJson.parse(rs.getString(1)).get("core")).runs();
      }
      db.commit();
      return n;
    } catch (SQLException | AttestException e) {
      throw new StoreException("run store: cannot read its head: " + e.getMessage(), e);
    }
  }

  /** Whether the store answers a trivial read (the watchdog's liveness probe). */
  public synchronized boolean ping() {
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("SELECT 1")) {
      boolean ok = rs.next();
      db.commit();
      return ok;
    } catch (SQLException e) {
      return false;
    }
  }

  public synchronized int count() {
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM runs")) {
      rs.next();
      int n = rs.getInt(1);
      db.commit();
      return n;
    } catch (SQLException e) {
      throw new StoreException("run store: count failed: " + e.getMessage(), e);
    }
  }

  /** A PRAGMA's value on this store's own connection (synchronous is per connection). */
  synchronized String pragma(String name) {
    if (!name.matches("[a-z_]+")) {
      throw new IllegalArgumentException("not a pragma name: " + name);
    }
    try {
      String v;
      try (Statement st = db.createStatement();
          ResultSet rs = st.executeQuery("PRAGMA " + name)) {
        v = rs.next() ? rs.getString(1) : null;
      }
      db.commit();
      return v;
    } catch (SQLException e) {
      throw new StoreException("run store: PRAGMA " + name + ": " + e.getMessage(), e);
    }
  }

  /** What a store-package reader or writer does on the store's one connection. */
  interface ConnectionWork<T> {
    T apply(Connection db) throws SQLException;
  }

  /**
   * Runs {@code work} on this store's connection under its lock and commits (a second writing
   * connection would break this one's snapshot: SQLITE_BUSY_SNAPSHOT); used by {@link FleetOutbox}.
   */
  synchronized <T> T onConnection(ConnectionWork<T> work) {
    try {
      T out = work.apply(db);
      db.commit();
      return out;
    } catch (SQLException e) {
      try {
        db.rollback();
      } catch (SQLException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new StoreException("run store: " + e.getMessage(), e);
    }
  }

  // ---- fleet aggregates (issue 14): receipts in ledger order ----------------------------------

  /** One receipt in ledger order, with the run and ledger position it belongs to. */
  public record FleetLeaf(
      long position, String runId, io.sandboxd.attest.FleetAggregate.Item item) {}

  /**
   * The ledger positions of the runs from the first created at or after {@code sinceMs} through the
   * last created at or before {@code untilMs} (contiguous in ledger order); empty when none.
   */
  public synchronized Optional<long[]> fleetRange(long sinceMs, long untilMs) {
    try (PreparedStatement st =
        db.prepareStatement(
            "SELECT (SELECT MIN(l.position) FROM ledger l JOIN runs r ON r.run_id = l.run_id"
                + " WHERE r.created_ms >= ?),"
                + " (SELECT MAX(l.position) FROM ledger l JOIN runs r ON r.run_id = l.run_id"
                + " WHERE r.created_ms <= ?)")) {
      st.setLong(1, sinceMs);
      st.setLong(2, untilMs);
      Optional<long[]> out = Optional.empty();
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        long from = rs.getLong(1);
        boolean none = rs.wasNull();
        long to = rs.getLong(2);
        none |= rs.wasNull();
        if (!none && from <= to) {
          out = Optional.of(new long[] {from, to});
        }
      }
      db.commit();
      return out;
    } catch (SQLException e) {
      throw new StoreException("run store: cannot read the ledger: " + e.getMessage(), e);
    }
  }

  /**
   * The receipts of the runs at ledger positions {@code from..to} (inclusive), in ledger then seq
   * order, each checked against the node's key; at most {@code maxLeaves}.
   */
  public synchronized List<FleetLeaf> fleetLeaves(long from, long to, long maxLeaves) {
    try (PreparedStatement st =
        db.prepareStatement(
            "SELECT l.position, l.run_id, rec.envelope FROM ledger l JOIN records rec"
                + " ON rec.run_id = l.run_id AND rec.kind = ?"
                + " WHERE l.position BETWEEN ? AND ? ORDER BY l.position, rec.seq LIMIT ?")) {
      st.setString(1, RecordKind.RECEIPT.stored());
      st.setLong(2, from);
      st.setLong(3, to);
      st.setLong(4, maxLeaves);
      List<FleetLeaf> out = new ArrayList<>();
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          Envelope env = Envelope.fromJson(CanonicalJson.parse(rs.getString(3)));
          if (env.verify(Optional.of(key.publicKey())) instanceof Verification.Invalid inv) {
            db.commit();
            throw new TamperedRunException(
                rs.getString(2), "receipt " + env.address() + ": " + inv.reason());
          }
          out.add(
              new FleetLeaf(
                  rs.getLong(1),
                  rs.getString(2),
                  new io.sandboxd.attest.FleetAggregate.Item(
                      env.address(), io.sandboxd.attest.Receipt.fromCore(env.core()))));
        }
      }
      db.commit();
      return out;
    } catch (SQLException | AttestException e) {
      throw new StoreException("run store: cannot read receipts: " + e.getMessage(), e);
    }
  }

  /** The signing key's public half (fleet aggregates are signed by the node). */
  public io.sandboxd.attest.PublicKey publicKey() {
    return key.publicKey();
  }

  /** Signs {@code core} with the node key (the daemon's fleet aggregates). */
  public Envelope sign(com.fasterxml.jackson.databind.node.ObjectNode core) {
    return Envelope.sign(core, key);
  }

  // ---- the node log (issue 14): every signed record a leaf, C2SP checkpoints -------------

  /**
   * Sets the log's name (the checkpoints' origin line and key name) and how often it signs a
   * checkpoint: after {@code everyRecords} new leaves, or {@code everyMs} ms with any new leaf.
   * {@code enabled} false stops appending (records stored meanwhile are never in the log).
   */
  public synchronized void configureLog(
      String origin, long everyRecords, long everyMs, boolean enabled) {
    log.policy(new NodeLog.Policy(origin, everyRecords, everyMs, enabled));
  }

  /** The log's origin (its name in checkpoints). */
  public synchronized String logOrigin() {
    return log.policy().origin();
  }

  /** Leaves in the node log. */
  public synchronized long logSize() {
    return log.size();
  }

  // Called with the monitor held, inside an append's transaction: a checkpoint that cannot be
  // signed must not take the runs with it.
  private void checkpointLogIfDue() throws SQLException {
    long now = System.currentTimeMillis();
    if (!log.due(now)) {
      return;
    }
    Savepoint sp = db.setSavepoint();
    NodeLog.Mark before = log.mark();
    try {
      log.checkpoint(key, now);
      db.releaseSavepoint(sp);
    } catch (SQLException | RuntimeException e) {
      db.rollback(sp);
      db.releaseSavepoint(sp);
      log.reset(before);
      LOG.warning("node log: checkpoint not signed: " + e.getMessage());
    }
  }

  /** Signs a checkpoint if the interval passed with new leaves (the daemon's timer calls it). */
  public synchronized boolean checkpointLogIfDueNow() {
    long size = log.size();
    NodeLog.Mark before = log.mark();
    try {
      if (!log.due(System.currentTimeMillis())) {
        return false;
      }
      log.checkpoint(key, System.currentTimeMillis());
      db.commit();
      return true;
    } catch (SQLException | RuntimeException e) {
      rollbackLog(before, e);
      throw new StoreException("node log: cannot sign a checkpoint: " + e.getMessage(), e);
    }
  }

  /** A signed checkpoint note and the tree size it is for. */
  public record LogNote(long treeSize, String note) {}

  /** The newest checkpoint, first signing one at the current size if the log grew since. */
  public synchronized LogNote logCheckpoint() {
    NodeLog.Mark before = log.mark();
    try {
      String note = log.checkpoint(key, System.currentTimeMillis());
      db.commit();
      return new LogNote(log.size(), note);
    } catch (SQLException | RuntimeException e) {
      rollbackLog(before, e);
      throw new StoreException("node log: cannot sign a checkpoint: " + e.getMessage(), e);
    }
  }

  /** A record's inclusion proof against the checkpoint {@code note}. */
  public record LogInclusion(
      String note, String address, String kind, io.sandboxd.attest.InclusionProof proof) {}

  /**
   * The inclusion proof of the record {@code address} (64 hex) against the newest checkpoint
   * (signed first if the log grew).
   *
   * @throws LogInputException for a malformed address
   * @throws LogNotFoundException when no leaf holds it
   */
  public synchronized LogInclusion proveInLog(String address) {
    if (!io.sandboxd.attest.Hex.isHex(address, 32)) {
      throw new LogInputException("address: expected 64 lowercase hex characters");
    }
    LogNote cp = logCheckpoint();
    try {
      Optional<NodeLog.Leaf> leaf = log.find(address);
      db.commit();
      if (leaf.isEmpty() || leaf.get().index() >= cp.treeSize()) {
        throw new LogNotFoundException("record " + address + " is not in the node log");
      }
      var proof =
          io.sandboxd.attest.LogTree.inclusionProof(
              NodeLog.HASH, log.nodes(), leaf.get().index(), cp.treeSize());
      return new LogInclusion(cp.note(), address, leaf.get().kind(), proof);
    } catch (SQLException e) {
      throw new StoreException("node log: cannot prove " + address + ": " + e.getMessage(), e);
    }
  }

  /** A consistency proof between two checkpoints (each signed for its size). */
  public record LogConsistency(
      String oldNote, String newNote, io.sandboxd.attest.ConsistencyProof proof) {}

  /**
   * The consistency proof from size {@code m} to size {@code n} of the log, with a checkpoint
   * signed for each (0 &lt; m ≤ n ≤ the log's size).
   */
  public synchronized LogConsistency logConsistency(long m, long n) {
    long size = log.size();
    if (m < 1 || m > n || n > size) {
      throw new LogInputException(
          "sizes "
              + m
              + " -> "
              + n
              + ": need 1 <= SIZE1 <= SIZE2 <= "
              + size
              + " (the log's size)");
    }
    try {
      var nodes = log.nodes();
      String origin = log.policy().origin();
      String oldNote = noteAt(origin, nodes, m);
      String newNote = noteAt(origin, nodes, n);
      var proof = io.sandboxd.attest.LogTree.consistencyProof(NodeLog.HASH, nodes, m, n);
      db.commit();
      return new LogConsistency(oldNote, newNote, proof);
    } catch (SQLException e) {
      throw new StoreException("node log: cannot prove consistency: " + e.getMessage(), e);
    }
  }

  // A checkpoint for an earlier size is the same tree head the log had then: consistent with
  // every checkpoint the log signs, so signing it on request is safe.
  private String noteAt(String origin, io.sandboxd.attest.LogTree.Nodes nodes, long size) {
    byte[] root = io.sandboxd.attest.LogTree.root(NodeLog.HASH, nodes, size);
    return io.sandboxd.attest.LogCheckpoint.of(origin, new io.sandboxd.attest.TreeHead(size, root))
        .sign(key);
  }

  /**
   * Logs signed records the store does not hold (environment manifests, signed at start): each
   * address once, however often it is signed again. Durable when this returns.
   */
  public synchronized void appendToLog(String kind, List<String> addresses) {
    NodeLog.Mark before = log.mark();
    try {
      for (String a : addresses) {
        if (!log.contains(a)) {
          log.append(kind, a);
        }
      }
      db.commit();
    } catch (SQLException | RuntimeException e) {
      rollbackLog(before, e);
      throw new StoreException("node log: records not logged: " + e.getMessage(), e);
    }
  }

  /** The node log before a transaction another table of this store runs (monitor held). */
  NodeLog.Mark logMark() {
    return log.mark();
  }

  /** Undoes the node log's leaves of a transaction that was rolled back (monitor held). */
  void logReset(NodeLog.Mark before) {
    log.reset(before);
  }

  /** The ledger before a durable-run transaction (monitor held). */
  StoreLedger.Mark ledgerMark() {
    return ledger.mark();
  }

  /** Undoes a rolled-back durable-run transaction's ledger appends (monitor held). */
  void ledgerReset(StoreLedger.Mark before) {
    ledger.reset(before);
  }

  /**
   * Puts durable segments in the signed store head (issue 23): each joins the durable chain and the
   * head is re-signed, in the open transaction (monitor held).
   */
  void ledgerDurable(String runId, List<Envelope> segments) throws SQLException {
    for (Envelope s : segments) {
      ledger.appendDurable(runId, s.core().get("seq").longValue(), s.address());
    }
    if (!segments.isEmpty()) {
      ledger.signHead(key);
    }
  }

  /**
   * Logs, in the open transaction, each of {@code records} this node signed, once: segments,
   * receipts and attestations stored by other tables (durable runs). Records signed by another node
   * (an imported run) are that node's, not this one's, and stay out of its log.
   */
  void logOwn(List<io.sandboxd.attest.Envelope> records) throws SQLException {
    String me = key.publicKey().hex();
    for (io.sandboxd.attest.Envelope e : records) {
      if (!e.publicKey().equals(me) || log.contains(e.address())) {
        continue;
      }
      String schema = e.core().path("schema").asText("");
      String kind =
          schema.startsWith("sandbox.run-segment/")
              ? NodeLog.SEGMENT
              : schema.startsWith("sandbox.receipt/")
                  ? NodeLog.RECEIPT
                  : schema.startsWith("sandbox.attestation/") ? NodeLog.ATTESTATION : schema;
      log.append(kind, e.address());
    }
  }

  /** The leaf kind of environment manifests, for {@link #appendToLog}. */
  public static final String MANIFEST_LEAF = NodeLog.MANIFEST;

  private void rollbackLog(NodeLog.Mark before, Exception e) {
    try {
      db.rollback();
    } catch (SQLException suppressed) {
      e.addSuppressed(suppressed);
    }
    log.reset(before);
  }

  @Override
  public synchronized void close() {
    try {
      db.close();
    } catch (SQLException e) {
      throw new StoreException("run store: close failed: " + e.getMessage(), e);
    }
  }
}
