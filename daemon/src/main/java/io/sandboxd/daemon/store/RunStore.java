package io.sandboxd.daemon.store;

import io.sandboxd.attest.ConsistencyProof;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.FleetAggregate;
import io.sandboxd.attest.InclusionProof;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.StoreCheckpoint;
import io.sandboxd.attest.StoreHead;
import io.sandboxd.attest.Verification;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.LongConsumer;

/**
 * The node's durable run store: SQLite in WAL mode with {@code synchronous=FULL}, so a commit is
 * fsynced before {@link #append} returns and nothing is acknowledged that is not on disk. A thin
 * front over the tables that each own one concern ({@link RunTable}, {@link GroupCommit}, {@link
 * StoreRetention}, {@link StoreCheckpoints}, {@link LogCheckpoints}, {@link LedgerReceipts}, {@link
 * DurableRunTable}, {@link JcpTable}, {@link RunOwners}), all on one connection ({@link StoreDb}).
 */
public final class RunStore implements AutoCloseable {
  /**
   * The page size of a store created from now on. A commit writes every page it changes whole, to
   * the WAL and again when checkpointed, and a run adds a few hundred bytes to each of a dozen
   * b-trees: with 2 KiB pages instead of SQLite's 4 KiB a run writes about a third less for the
   * same bytes kept. 1 KiB pages wrote half, but spread each run's records over overflow pages that
   * made the verifier's check of a run about 30% dearer. A store keeps the size it was made with:
   * WAL mode cannot change it.
   */
  static final int PAGE_BYTES = 2048;

  /**
   * Disk the store's write-ahead log may take: twice its checkpoint bound (each frame is a page and
   * a 24-byte header), for a batch that crosses it and a reader that holds a checkpoint back. The
   * node's disk reserve never keeps less, or units could take the room the next runs' commits need.
   */
  public static final long LOG_ROOM_BYTES =
      2L * WalCheckpointer.FOREGROUND_PAGES * (PAGE_BYTES + 24);

  private final Path file;
  private final SigningKey key;
  private final StoreDb db;
  private final RunTable runs;
  private final GroupCommit commit;
  private final StoreRetention retention;
  private final StoreCheckpoints checkpoints;
  private final LogCheckpoints log;
  private final StoreLedger ledger;
  private final LedgerReceipts receipts;
  private final DurableRunTable durable;
  private final RunOwners owners;

  private final WalCheckpointer checkpointer;

  private RunStore(Path file, Connection connection, SigningKey key) throws SQLException {
    this.file = file;
    this.key = key;
    this.db = new StoreDb(connection, this);
    this.ledger = StoreLedger.open(connection, db.statements());
    NodeLog nodeLog =
        new NodeLog(
            connection,
            db.statements(),
            new NodeLog.Policy(
                "sandboxd/" + key.publicKey().hex().substring(0, 16), 1024, 1000, true));
    connection.commit();
    this.log = new LogCheckpoints(db, nodeLog, key);
    this.runs = new RunTable(db, key.publicKey(), nodeLog, ledger);
    this.checkpointer = WalCheckpointer.start(file);
    this.commit = new GroupCommit(db, runs, ledger, log, key, checkpointer::committed);
    this.retention = new StoreRetention(db, ledger::size);
    this.checkpoints = new StoreCheckpoints(db, key, log, runs, this::openReader);
    this.receipts = new LedgerReceipts(db, key.publicKey());
    this.durable = new DurableRunTable(this, db);
    this.owners = new RunOwners(db);
  }

  /**
   * Opens (creating if needed) the store at {@code file}, mode 0600, and brings its schema to the
   * latest version (see {@link StoreSchema}); a store written by a newer sandboxd is refused.
   * {@code key} signs the store head as runs are appended (and the runs of a store upgraded from
   * before the ledger, once verified), and is the key they are checked against.
   */
  public static RunStore open(Path file, SigningKey key) {
    try {
      Files.createDirectories(file.toAbsolutePath().getParent());
      if (!Files.exists(file)) {
        Files.createFile(
            file,
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      }
      boolean empty = Files.size(file) == 0;
      Connection db = StoreDb.connect(file, false);
      try (Statement st = db.createStatement()) {
        if (empty) {
          // Before WAL mode: a page size is fixed when the first page is written.
          st.execute("PRAGMA page_size=" + PAGE_BYTES);
        }
        st.execute("PRAGMA journal_mode=WAL");
        st.execute("PRAGMA synchronous=FULL");
        st.execute("PRAGMA foreign_keys=ON");
        st.execute("PRAGMA busy_timeout=5000");
        // Savepoint (statement) journals in memory: on disk, each run's savepoint opened, wrote
        // and deleted a temporary file. A crash loses nothing by it: the WAL commits or it does
        // not.
        st.execute("PRAGMA temp_store=MEMORY");
        // Checkpoints run on their own thread (WalCheckpointer); this bound is only a backstop.
        st.execute("PRAGMA wal_autocheckpoint=" + WalCheckpointer.FOREGROUND_PAGES);
      }
      db.setAutoCommit(false);
      try {
        StoreSchema.migrate(db, key, file);
      } catch (StoreException e) {
        db.close();
        throw e;
      }
      try {
        return new RunStore(file, db, key);
      } catch (SQLException | RuntimeException e) {
        // E.g. the checkpoint connection could not open: the store's own must not stay open.
        db.close();
        throw e;
      }
    } catch (SQLException | IOException e) {
      throw new StoreException("run store " + file + ": cannot open: " + e.getMessage(), e);
    }
  }

  public Path file() {
    return file;
  }

  /** Who owns each run (issue 23), on the store's connection and lock. */
  public RunOwners owners() {
    return owners;
  }

  /** The durable runs held in this store (issue 12), on the store's connection and lock. */
  public DurableRunTable durable() {
    return durable;
  }

  // ---- appending runs -------------------------------------------------------------------------

  /** Hears how long each durable commit took (ns, fsync included): for the daemon's metrics. */
  public void onAppend(LongConsumer timer) {
    commit.onCommit(timer);
  }

  /**
   * Appends several runs' records in one fsynced transaction (all or none); returns once durable.
   * Tools that fill a store use it; the daemon appends one run at a time through {@link #append}.
   */
  public void appendAll(List<RunRecord> records) {
    if (records.isEmpty()) {
      return;
    }
    commit.appendAll(records);
    retention.apply(records.get(records.size() - 1).runId());
  }

  /**
   * Appends one run's records; returns once they are durable. Runs appended together share one
   * commit (see {@link GroupCommit}); a failure is its own run's.
   *
   * @throws StoreException when this run was not stored
   */
  public void append(RunRecord r) {
    commit.append(r);
    retention.applyIfDue(r);
  }

  /**
   * Sets how many runs one commit takes at most; 1 turns group commit off (one transaction and one
   * fsync per run), for measuring what batching gains.
   */
  public void maxBatch(int runs) {
    commit.maxBatch(runs);
  }

  /** Commits made by appends so far and the runs they stored: their ratio is the batch size. */
  public record CommitStats(long commits, long runs) {}

  public CommitStats commitStats() {
    return commit.stats();
  }

  // ---- retention ------------------------------------------------------------------------------

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

  /** Sets the retention and applies it now; later appends apply it too. */
  public void retain(Retention r) {
    retention.set(r);
  }

  /**
   * Prunes the bulky data of the oldest runs until {@code r} holds (never {@code keep}'s, the run
   * just stored); returns how many runs were pruned. Signed records and the run rows stay, so every
   * chain still verifies and a pruned run is shown as pruned, not as missing.
   */
  public int prune(Retention r, long nowMs, String keep) {
    return retention.prune(r, nowMs, keep);
  }

  /** Whether, when and why retention pruned this run's bulky data. */
  public Optional<Pruned> pruned(String runId) {
    return retention.pruned(runId);
  }

  // ---- reading runs ---------------------------------------------------------------------------

  /** A WASI command's stored inputs and outputs by address; empty for a unit without WASI. */
  public Optional<RunIo.Stored> io(String runId) {
    return runs.io(runId);
  }

  /**
   * The bytes stored under {@code address} (stdin, stdout or stderr of some run), checked against
   * it; empty when retention pruned them.
   */
  public Optional<byte[]> ioBlob(String runId, String address) {
    return runs.ioBlob(runId, address);
  }

  /** The bytes of a module some stored run ran, checked against its address; empty if none. */
  public Optional<byte[]> module(String address) {
    return runs.module(address);
  }

  /** The uid that submitted {@code runId}, when the daemon knew it (runs before this: empty). */
  public OptionalLong submitter(String runId) {
    return runs.submitter(runId);
  }

  /** The run as its signed records say, or marked tampered; empty for an unknown run. */
  public Optional<RunSummary> run(String runId) {
    List<RunSummary> l = runs.query("WHERE r.run_id = ?", runId, 1);
    return l.isEmpty() ? Optional.empty() : Optional.of(l.get(0));
  }

  /** The newest {@code limit} runs, newest first, each checked as {@link #run} does. */
  public List<RunSummary> list(int limit) {
    return runs.query("", null, limit);
  }

  /**
   * A run's envelopes of one kind, by seq; throws {@link TamperedRunException} if one does not
   * verify or the run does not check.
   */
  public List<Envelope> records(String runId, RecordKind kind) {
    return runs.records(runId, kind);
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
  public Optional<Submission> submission(String runId) {
    return runs.submission(runId);
  }

  /** The run's journal entries in order (canonical JSON). */
  public List<String> journal(String runId) {
    return runs.journal(runId);
  }

  /** How many stored runs end in each outcome kind ("Completed", "Terminated", ...). */
  public Map<String, Long> runsByOutcome() {
    return runs.runsByOutcome();
  }

  public int count() {
    return runs.count();
  }

  // ---- verification ---------------------------------------------------------------------------

  /**
   * Checks the whole store against the node's signed records (see {@link StoreAudit}) and remembers
   * the damaged runs, so that they are listed as tampered and never with their stored values.
   * Called at start: a damaged store is reported, never repaired by dropping records.
   */
  public List<StoreDamage> verifyAll() {
    return checkpoints.verifyAll();
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
  public StartupCheck verifyFromCheckpoint() {
    return checkpoints.verifyFromCheckpoint();
  }

  /** As above, on at most {@code cores} threads (tests compare 1 with several). */
  StartupCheck verifyFromCheckpoint(int cores) {
    return checkpoints.verifyFromCheckpoint(cores);
  }

  /**
   * Remembers damaged runs, so they are listed as tampered; {@code replace} forgets older finds.
   */
  void remember(List<StoreDamage> found, boolean replace) {
    runs.remember(found, replace);
  }

  /**
   * The sealed checkpoint, verified against the node's key; empty when none was sealed yet. One
   * that does not verify throws {@link StoreException}.
   */
  public Optional<StoreCheckpoint> checkpoint() {
    return checkpoints.checkpoint();
  }

  /**
   * Seals a checkpoint: every run before ledger position {@code runs} verified, their chain {@code
   * chain}. Never moves it back; returns whether it moved.
   */
  boolean seal(long runs, String chain) {
    return checkpoints.seal(runs, chain);
  }

  /** The signed store head's line for the log: run count and chain, or none for an empty store. */
  public String headLine() {
    return checkpoints.headLine();
  }

  /** How many runs the signed store head counts (0 for an empty store); O(1), not verified. */
  public long headRuns() {
    return checkpoints.headRuns();
  }

  /** A second, read-only connection to the store, for checks that must not hold up appends. */
  Connection openReader() throws SQLException {
    Connection reader = StoreDb.connect(file, true);
    reader.setAutoCommit(false);
    return reader;
  }

  /** The node's public key, which every record in the store must verify under. */
  PublicKey signer() {
    return key.publicKey();
  }

  // ---- warm-pool records ----------------------------------------------------------------------

  /** Stores signed warm-pool eviction records in one fsynced transaction. */
  public void appendEvictions(List<Envelope> evictions) {
    synchronized (this) {
      NodeLog.Mark before = log.mark();
      db.transact(
          "warm-pool evictions not stored",
          () -> log.reset(before),
          c -> {
            for (Envelope e : evictions) {
              PoolRecordTable.insertEviction(db, e);
              log.appendOnce(NodeLog.EVICTION, e.address());
            }
            return null;
          });
    }
  }

  /** The run's signed warm-pool claim (verified), or empty for a run that started cold. */
  public Optional<Envelope> claim(String runId) {
    Optional<Envelope> c =
        db.transact(
            "run " + runId + ": cannot read its claim", conn -> PoolRecordTable.claim(conn, runId));
    if (c.isPresent()
        && c.get().verify(Optional.of(key.publicKey())) instanceof Verification.Invalid inv) {
      throw new TamperedRunException(
          runId, "warm-pool claim " + c.get().address() + ": " + inv.reason());
    }
    return c;
  }

  /** The newest {@code limit} signed eviction records, oldest first. */
  public List<Envelope> evictions(int limit) {
    return db.transact(
        "cannot read warm-pool evictions", conn -> PoolRecordTable.evictions(conn, limit));
  }

  // ---- the connection, for the other tables of this package -----------------------------------

  /** Work on the store's connection inside one transaction. */
  @FunctionalInterface
  interface Work<T> extends StoreDb.Work<T> {}

  /**
   * Runs {@code work} in one transaction under the store's lock and commits it (fsynced before it
   * returns), or rolls it back and throws naming {@code what}.
   */
  <T> T transact(String what, Work<T> work) {
    return db.transact(what, work);
  }

  /** The first row {@code sql} selects, read in one transaction ({@link StoreDb#firstRow}). */
  <T> Optional<T> firstRow(String what, String sql, StoreDb.Row<T> row, Object... params) {
    return db.firstRow(what, sql, row, params);
  }

  /** What a store-package reader or writer does on the store's one connection. */
  interface ConnectionWork<T> extends StoreDb.Work<T> {}

  /**
   * Runs {@code work} on this store's connection under its lock and commits (a second writing
   * connection would break this one's snapshot: SQLITE_BUSY_SNAPSHOT); used by {@link FleetOutbox}.
   */
  <T> T onConnection(ConnectionWork<T> work) {
    return db.transact("run store", work);
  }

  /** Whether the store answers a trivial read (the watchdog's liveness probe). */
  public boolean ping() {
    try {
      return db.transact(
          "run store: ping",
          c -> {
            try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT 1")) {
              return rs.next();
            }
          });
    } catch (StoreException e) {
      return false;
    }
  }

  /** Background checkpoints of the write-ahead log done so far (for tests). */
  long walCheckpoints() {
    return checkpointer.checkpoints();
  }

  /** A PRAGMA's value on this store's own connection (synchronous is per connection). */
  String pragma(String name) {
    if (!name.matches("[a-z_]+")) {
      throw new IllegalArgumentException("not a pragma name: " + name);
    }
    return db.transact(
        "run store: PRAGMA " + name,
        c -> {
          try (Statement st = c.createStatement();
              ResultSet rs = st.executeQuery("PRAGMA " + name)) {
            return rs.next() ? rs.getString(1) : null;
          }
        });
  }

  /**
   * Caps the store's file at {@code pages} pages on its own connection, or at its size when that is
   * larger (for tests: past the cap SQLite fails as on a full disk, with SQLITE_FULL); returns the
   * cap in force.
   */
  public long maxPages(long pages) {
    return db.transact(
        "run store: PRAGMA max_page_count",
        c -> {
          try (Statement st = c.createStatement();
              ResultSet rs = st.executeQuery("PRAGMA max_page_count=" + pages)) {
            rs.next();
            return rs.getLong(1);
          }
        });
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

  // ---- fleet aggregates (issue 14): receipts in ledger order ----------------------------------

  /** One receipt in ledger order, with the run and ledger position it belongs to. */
  public record FleetLeaf(long position, String runId, FleetAggregate.Item item) {}

  /**
   * The ledger positions of the runs from the first created at or after {@code sinceMs} through the
   * last created at or before {@code untilMs} (contiguous in ledger order); empty when none.
   */
  public Optional<long[]> fleetRange(long sinceMs, long untilMs) {
    return receipts.range(sinceMs, untilMs);
  }

  /**
   * The receipts of the runs at ledger positions {@code from..to} (inclusive), in ledger then seq
   * order, each checked against the node's key; at most {@code maxLeaves}.
   */
  public List<FleetLeaf> fleetLeaves(long from, long to, long maxLeaves) {
    return receipts.leaves(from, to, maxLeaves);
  }

  /**
   * The durable-ledger positions of the durable runs created in {@code [sinceMs, untilMs]}
   * (contiguous in durable-ledger order); empty when none.
   */
  public Optional<long[]> durableFleetRange(long sinceMs, long untilMs) {
    return new DurableReceipts(db, key.publicKey()).range(sinceMs, untilMs);
  }

  /**
   * This node's durable receipts at durable-ledger positions {@code from..to} (inclusive), in that
   * order, each checked; at most {@code maxLeaves}.
   */
  public List<FleetLeaf> durableFleetLeaves(long from, long to, long maxLeaves) {
    return new DurableReceipts(db, key.publicKey()).leaves(from, to, maxLeaves);
  }

  /** Runs in the ledger: where the next stored run goes. */
  public long ledgerSize() {
    synchronized (this) {
      return ledger.size();
    }
  }

  /** The signing key's public half (fleet aggregates are signed by the node). */
  public PublicKey publicKey() {
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
  public void configureLog(String origin, long everyRecords, long everyMs, boolean enabled) {
    log.configure(origin, everyRecords, everyMs, enabled);
  }

  /** The log's origin (its name in checkpoints). */
  public String logOrigin() {
    return log.origin();
  }

  /** Leaves in the node log. */
  public long logSize() {
    return log.size();
  }

  /** Signs a checkpoint if the interval passed with new leaves (the daemon's timer calls it). */
  public boolean checkpointLogIfDueNow() {
    return log.checkpointIfDueNow();
  }

  /** A signed checkpoint note and the tree size it is for. */
  public record LogNote(long treeSize, String note) {}

  /** The newest checkpoint, first signing one at the current size if the log grew since. */
  public LogNote logCheckpoint() {
    return log.latest();
  }

  /** A record's inclusion proof against the checkpoint {@code note}. */
  public record LogInclusion(String note, String address, String kind, InclusionProof proof) {}

  /**
   * The inclusion proof of the record {@code address} (64 hex) against the newest checkpoint
   * (signed first if the log grew).
   *
   * @throws LogInputException for a malformed address
   * @throws LogNotFoundException when no leaf holds it
   */
  public LogInclusion proveInLog(String address) {
    return log.prove(address);
  }

  /** A consistency proof between two checkpoints (each signed for its size). */
  public record LogConsistency(String oldNote, String newNote, ConsistencyProof proof) {}

  /**
   * The consistency proof from size {@code m} to size {@code n} of the log, with a checkpoint
   * signed for each (0 &lt; m ≤ n ≤ the log's size).
   */
  public LogConsistency logConsistency(long m, long n) {
    return log.consistency(m, n);
  }

  /**
   * Logs signed records the store does not hold (environment manifests, signed at start): each
   * address once, however often it is signed again. Durable when this returns.
   */
  public void appendToLog(String kind, List<String> addresses) {
    log.appendAddresses(kind, addresses);
  }

  /** The node log before a transaction another table of this store runs (lock held). */
  NodeLog.Mark logMark() {
    return log.mark();
  }

  /** Undoes the node log's leaves of a transaction that was rolled back (lock held). */
  void logReset(NodeLog.Mark before) {
    log.reset(before);
  }

  /**
   * A bound for a verifier's pass: the latest head this process signed over at most {@code runs}
   * runs ({@link StoreLedger#signedHeadAtMost}, whose condition the caller keeps), or empty.
   */
  Optional<StoreAudit.Bound> signedHeadAtMost(long runs) {
    return ledger
        .signedHeadAtMost(runs)
        .map(h -> new StoreAudit.Bound(StoreHead.fromCore(h.core()).runs(), h));
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

  /** Logs, in the open transaction, each of {@code records} this node signed, once. */
  void logOwn(List<Envelope> records) throws SQLException {
    log.logOwn(records);
  }

  /** The leaf kind of environment manifests, for {@link #appendToLog}. */
  public static final String MANIFEST_LEAF = NodeLog.MANIFEST;

  @Override
  public void close() {
    synchronized (this) {
      // The checkpoint connection first: the store's, closed last, folds the log in and removes it.
      checkpointer.close();
      try {
        db.connection().close();
      } catch (SQLException e) {
        throw new StoreException("run store: close failed: " + e.getMessage(), e);
      }
    }
  }
}
