package io.sandboxd.daemon.store;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.EvidenceBundle;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.MerkleTree;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.StoreHead;
import io.sandboxd.attest.StoredRun;
import io.sandboxd.attest.Verification;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Checks the whole run store against what the node signed: the store head (run count and hash chain
 * over every run's store record, which the head's signature so authenticates), each run's row
 * (every column a listing shows), its segments, receipts and attestations and how they reference
 * each other, its journal (against the attestation's journal_root), and every content-addressed
 * blob and module.
 */
final class StoreAudit {
  private StoreAudit() {}

  /** How deep a run's signed records are checked. */
  enum Depth {
    /**
     * Each record read as JSON and strictly by its schema, its signature verified (or found in the
     * memo of signatures this process made), its links to the run's other records checked.
     */
    FULL,
    /**
     * As FULL, but a run whose every record is, byte for byte, one this process signed (its bytes
     * hash to an address that, with the record's key and signature, is in the process's keyed memo
     * of its own signatures) and the one the run's chained store-run names for its kind is not read
     * as JSON beyond its attestation's journal root: what the check would re-derive from it, this
     * process wrote. A change to any stored byte still fails (the hash, the memo or the names
     * differ, and the run is checked in FULL). What the background seal uses: it checks runs this
     * process stored moments before. A start-up (an empty memo) and {@code store verify} use FULL.
     */
    SIGNED_HERE
  }

  /** The columns of one {@code runs} row and what the records table says about its chain. */
  record RunRow(
      String runId,
      long createdMs,
      String unit,
      String grantsId,
      String outcome,
      String log,
      String grants,
      String entry,
      int segments,
      String head,
      boolean pruned) {}

  /**
   * The store record of a row, or the first column that does not match it. Cheap enough to run on
   * every read: one hash of the log (and one signature for a row from before per-batch heads). The
   * record itself is authenticated by the chain under the signed head, which start-up, the
   * background verifier and {@code sandboxctl store verify} check.
   */
  static Optional<StoreDamage> checkRow(RunRow row, byte[] ledgerEnvelope, PublicKey signer) {
    LedgerEntry e = ledgerEntry(row.runId(), ledgerEnvelope, signer);
    return e.damage().isPresent() ? e.damage() : rowDamage(row, e.stored());
  }

  /** A run's store record read (once) from its ledger text, or why it cannot be trusted. */
  private record LedgerEntry(StoredRun stored, Optional<StoreDamage> damage) {}

  private static LedgerEntry ledgerEntry(String id, byte[] ledgerEnvelope, PublicKey signer) {
    if (ledgerEnvelope == null) {
      return new LedgerEntry(
          null, damage(id, "ledger", "the run is not in the node's signed ledger"));
    }
    return ledgerEntry(id, StoreLedger.Stored.read(ledgerEnvelope), signer);
  }

  private static LedgerEntry ledgerEntry(String id, StoreLedger.Stored text, PublicKey signer) {
    if (text.unreadable() != null) {
      return new LedgerEntry(null, unreadable(id, text.unreadable()));
    }
    try {
      StoreLedger.Row entry = text.row();
      // A chained core is authenticated by the signed head over the chain (checked by the audit);
      // a row from before per-batch heads carries its own signature.
      if (entry.signed().isPresent()
          && entry.signed().get().verify(Optional.of(signer)) instanceof Verification.Invalid inv) {
        return new LedgerEntry(
            null, damage(id, "ledger", "its signed store record does not verify: " + inv.reason()));
      }
      return new LedgerEntry(entry.stored(), Optional.empty());
    } catch (AttestException e) {
      return new LedgerEntry(null, unreadable(id, e));
    }
  }

  private static Optional<StoreDamage> unreadable(String id, AttestException e) {
    return damage(id, "ledger", "its signed store record is unreadable: " + e.getMessage());
  }

  /** The first column of {@code row} that does not match the store record {@code s}. */
  static Optional<StoreDamage> rowDamage(RunRow row, StoredRun s) {
    String id = row.runId();
    if (!s.runId().equals(id)) {
      return damage(id, "run_id", "the signed store record is for run " + s.runId());
    }
    if (s.createdMs() != row.createdMs()) {
      return mismatch(id, "created_ms", row.createdMs(), s.createdMs());
    }
    if (!s.unit().equals(row.unit())) {
      return mismatch(id, "unit", row.unit(), s.unit());
    }
    if (!s.grantsId().equals(row.grantsId())) {
      return mismatch(id, "grants_id", row.grantsId(), s.grantsId());
    }
    String signedOutcome = CanonicalJson.canonicalString(s.outcome().toJson());
    if (!signedOutcome.equals(row.outcome())) {
      return mismatch(id, "outcome", row.outcome(), signedOutcome);
    }
    // Retention empties a pruned run's log; its signed address still names what it was.
    boolean logPruned = row.pruned() && row.log().isEmpty();
    if (!logPruned
        && (!StoredRun.textAddress(row.log()).equals(s.log())
            || StoredRun.textBytes(row.log()) != s.logBytes())) {
      return damage(
          id, "log", "the log does not hash to the signed log address " + s.log() + "; not shown");
    }
    if (GrantsTexts.REFERENCE.equals(row.grants())) {
      // The text itself (kept once for all its runs) is checked against grants_id with the db.
      if (!row.grantsId().equals(s.grants())) {
        return damage(
            id,
            "grants",
            "the row refers to the grants text of "
                + row.grantsId()
                + ", not to the signed "
                + s.grants());
      }
    } else if (!StoredRun.textAddress(row.grants()).equals(s.grants())) {
      return damage(id, "grants", "the grants do not hash to the signed address " + s.grants());
    }
    if (!row.entry().equals(s.entry())) {
      return mismatch(id, "entry", row.entry(), s.entry());
    }
    if (row.segments() != 1 || !s.segment().equals(row.head())) {
      return damage(
          id,
          "records",
          "its segments ("
              + row.segments()
              + ", head "
              + row.head()
              + ") are not the signed "
              + s.segment());
    }
    return Optional.empty();
  }

  private static Optional<StoreDamage> mismatch(String id, String column, Object got, Object want) {
    return damage(id, column, "stored " + got + " does not match the signed " + want);
  }

  private static Optional<StoreDamage> damage(String id, String column, String reason) {
    return Optional.of(new StoreDamage(id, column, reason));
  }

  /** Where an audit starts: a ledger position and the hash chain over the runs before it. */
  record Start(long position, String chain) {
    static final Start GENESIS = new Start(0, StoreHead.EMPTY_CHAIN);
  }

  /**
   * What an audit found, and what it covered: the ledger's length and the hash chain over it, as
   * the audit computed them (a checkpoint sealed from a clean audit names exactly these).
   */
  record Result(List<StoreDamage> damage, long checked, long ledgerSize, String chain) {
    boolean clean() {
      return damage.isEmpty();
    }
  }

  /**
   * The runs of one slice of the ledger, from {@code from} on, at most {@code limit} of them, and
   * where the next slice starts. A long audit goes slice by slice, each in a read transaction of
   * its own, so that no snapshot is held for long (a reader that stays open keeps SQLite from
   * checkpointing its WAL, which then grows with every append).
   */
  record Slice(List<StoreDamage> damage, long checked, Start next, boolean end) {}

  /**
   * The signed store head a read transaction sees: the end of a bounded audit, which checks the
   * runs before {@code head.runs()} and then this head against them, while later runs keep coming.
   * Empty when there is no head or it does not read (then only a whole audit can say why).
   */
  static Optional<Bound> bound(Connection db) throws SQLException {
    Optional<String> text = StoreLedger.headText(db);
    if (text.isEmpty()) {
      return Optional.empty();
    }
    try {
      Envelope env = Envelope.fromJson(CanonicalJson.parse(text.get()));
      return Optional.of(new Bound(StoreHead.fromCore(env.core()).runs(), env));
    } catch (AttestException e) {
      return Optional.empty();
    }
  }

  /** Where a bounded audit ends: the ledger's length a signed head covered, and that head. */
  record Bound(long runs, Envelope head) {}

  /**
   * Completes a bounded audit that checked the runs from {@code from} to {@code reached}: {@code
   * bound}'s head must verify under the node key and sign exactly the chain recomputed over the
   * ledger up to its run count. What the head says of the whole store at that time (the run rows'
   * count) is left to the whole audit (start-up and the full pass check it against the head then).
   * Durable runs are checked whole, as in every audit, in the caller's read transaction.
   */
  static Result bounded(
      Connection db,
      PublicKey signer,
      Start from,
      Start reached,
      Bound bound,
      List<StoreDamage> runDamage)
      throws SQLException {
    List<StoreDamage> out = new ArrayList<>();
    String store = StoreDamage.STORE;
    StoreHead head = StoreHead.fromCore(bound.head().core());
    if (bound.head().verify(Optional.of(signer)) instanceof Verification.Invalid inv) {
      out.add(
          new StoreDamage(
              store, "store_head", "the signed store head does not verify: " + inv.reason()));
    } else if (reached.position() != bound.runs()) {
      out.add(
          new StoreDamage(
              store,
              "ledger",
              "ledger positions are not dense from 0 up to the signed head's "
                  + bound.runs()
                  + " runs: reordered or deleted"));
    } else if (!head.chain().equals(reached.chain())) {
      out.add(
          new StoreDamage(
              store,
              "ledger",
              "the hash chain over the ledger is "
                  + reached.chain()
                  + ", the signed head says "
                  + head.chain()
                  + ": a run was replaced, deleted or reordered"));
    }
    out.addAll(runDamage);
    out.addAll(DurableAudit.damage(db));
    return new Result(out, reached.position() - from.position(), bound.runs(), reached.chain());
  }

  /**
   * The damage in at most {@code limit} runs from {@code from}, before ledger position {@code end};
   * see {@link Slice}. {@code parallel}, when set, checks the runs' records (the costly part:
   * signatures, evidence, journals) on its own threads and connections, while this thread reads the
   * ledger in order and extends the chain, each thread reading its runs' records and journals;
   * without it they are read a chunk of ledger positions at a time ({@link RunReads.Chunk}). The
   * damage comes back in ledger order either way. The queries are {@code q}'s, on its connection (a
   * pass of many slices prepares them once).
   */
  static Slice slice(
      Statements q,
      PublicKey signer,
      Start from,
      long end,
      long limit,
      java.util.function.LongConsumer progress,
      ParallelRunCheck parallel,
      Depth depth)
      throws SQLException {
    List<StoreDamage> runs = new ArrayList<>();
    List<LedgerRun> pending = new ArrayList<>();
    int batch = parallel == null ? 1 : ParallelRunCheck.BATCH;
    String chain = from.chain();
    long expect = from.position();
    long read = 0;
    RunReads.Chunk chunk = null;
    PreparedStatement st =
        q.of(
            "SELECT l.position, l.run_id, l.envelope, "
                + ROW_COLUMNS
                + " FROM ledger l LEFT JOIN runs r ON r.run_id = l.run_id"
                + " WHERE l.position >= ? AND l.position < ? ORDER BY l.position LIMIT ?");
    StoreDb.bind(st, from.position(), end, limit);
    try (ResultSet rs = st.executeQuery()) {
      while (rs.next()) {
        read++;
        long pos = rs.getLong(1);
        if (pos != expect) {
          // Not dense: the whole-store check names it; this slice stops here.
          check(q, signer, parallel, pending, runs, progress, depth);
          return new Slice(runs, read - 1, new Start(expect, chain), true);
        }
        expect++;
        // Read once: for the chain here, and for the run's own check.
        StoreLedger.Stored text = StoreLedger.Stored.read(rs.getBytes(3));
        chain = StoreHead.extend(chain, text.address());
        RunReads reads = null;
        if (parallel == null) {
          if (chunk == null || !chunk.covers(pos)) {
            chunk = RunReads.Chunk.read(q, pos);
          }
          // A run whose rows alone pass the chunk's bound in bytes is read on its own.
          reads = chunk.covers(pos) ? chunk.at(pos) : RunReads.of(q, rs.getString(2));
        }
        pending.add(
            new LedgerRun(
                pos, rs.getString(2), text, rs.getString(4) == null ? null : row(rs, 4), reads));
        if (pending.size() >= batch) {
          check(q, signer, parallel, pending, runs, progress, depth);
        }
      }
    }
    check(q, signer, parallel, pending, runs, progress, depth);
    return new Slice(runs, read, new Start(expect, chain), read < limit);
  }

  /**
   * A run as the ledger read gives it: position, id, ledger row as read, its row (null: deleted),
   * and its records and journal when read with the ledger's (null: the check reads them).
   */
  record LedgerRun(
      long position, String runId, StoreLedger.Stored text, RunRow row, RunReads reads) {}

  /** Checks {@code pending} (then empties it), adding their damage to {@code runs} in order. */
  private static void check(
      Statements q,
      PublicKey signer,
      ParallelRunCheck parallel,
      List<LedgerRun> pending,
      List<StoreDamage> runs,
      java.util.function.LongConsumer progress,
      Depth depth)
      throws SQLException {
    if (pending.isEmpty()) {
      return;
    }
    List<Optional<StoreDamage>> found;
    if (parallel == null) {
      found = new ArrayList<>(pending.size());
      for (LedgerRun run : pending) {
        found.add(checkRun(q, signer, run, depth));
      }
    } else {
      found = parallel.check(pending);
    }
    for (int i = 0; i < pending.size(); i++) {
      found.get(i).ifPresent(runs::add);
      if (progress != null) {
        progress.accept(pending.get(i).position());
      }
    }
    pending.clear();
  }

  /** One ledger row's run: its row, its signed records and its journal. */
  static Optional<StoreDamage> checkRun(Statements q, PublicKey signer, LedgerRun run, Depth depth)
      throws SQLException {
    String runId = run.runId();
    if (run.row() == null) {
      return Optional.of(
          new StoreDamage(
              runId, "runs", "the run is in the signed ledger but its row was deleted"));
    }
    RunRow row = run.row();
    LedgerEntry entry = ledgerEntry(runId, run.text(), signer);
    if (entry.damage().isPresent()) {
      return entry.damage();
    }
    StoredRun signed = entry.stored();
    Optional<StoreDamage> d = rowDamage(row, signed);
    if (d.isEmpty() && signed.position() != run.position()) {
      d = damage(runId, "ledger", "its store record names position " + signed.position());
    }
    RunReads reads = run.reads() != null ? run.reads() : RunReads.of(q, runId);
    if (d.isEmpty()) {
      Optional<String> grants = reads.grantsDamage(row);
      if (grants.isPresent()) {
        d = damage(runId, "grants", grants.get());
      }
    }
    if (d.isEmpty()) {
      d = recordsDamage(reads, row, signed, signer, depth);
    }
    return d;
  }

  /** Every damage found, store-wide first; at most one per run (the first found). */
  static List<StoreDamage> audit(Connection db, PublicKey signer) throws SQLException {
    return audit(db, signer, Start.GENESIS, null).damage();
  }

  /**
   * The damage in the runs from {@code from} on, and in what the store head signs about the whole
   * store (run count, dense positions, the chain extended from {@code from}'s to the head's). From
   * genesis this is the full check, content-addressed blobs and modules included; from a sealed
   * checkpoint it costs only the runs after it. It streams: memory stays flat whatever the store
   * holds. {@code progress}, when set, is told each ledger position checked.
   */
  static Result audit(
      Connection db, PublicKey signer, Start from, java.util.function.LongConsumer progress)
      throws SQLException {
    return audit(db, signer, from, progress, null);
  }

  /**
   * As above, the runs' records checked by {@code parallel} when it is set (see {@link #slice}).
   */
  static Result audit(
      Connection db,
      PublicKey signer,
      Start from,
      java.util.function.LongConsumer progress,
      ParallelRunCheck parallel)
      throws SQLException {
    try (Statements q = new Statements(db)) {
      Slice runs =
          slice(q, signer, from, Long.MAX_VALUE, Long.MAX_VALUE, progress, parallel, Depth.FULL);
      return wholeStore(db, signer, from, runs.next(), runs.damage());
    }
  }

  /**
   * Completes an audit that checked the runs from {@code from} to {@code reached} (in slices) and
   * found {@code runDamage}: the head (run and ledger counts, dense positions, the chain) and, from
   * genesis, the run rows no ledger record names and the content-addressed rows (each a scan of the
   * whole store, which a start from a checkpoint must not pay). Must run in the read transaction of
   * the last slice.
   */
  static Result wholeStore(
      Connection db, PublicKey signer, Start from, Start reached, List<StoreDamage> runDamage)
      throws SQLException {
    // Two queries, not one: COUNT(*) alone counts the cells of the smallest index without reading
    // them (a third of the time of one scan computing both), and MAX of the key is one probe.
    long ledgerSize =
        StoreDb.first(db, "SELECT COUNT(*) FROM ledger", rs -> rs.getLong(1)).orElse(0L);
    long end =
        StoreDb.first(db, "SELECT COALESCE(MAX(position) + 1, 0) FROM ledger", rs -> rs.getLong(1))
            .orElse(0L);
    // Positions before the start were checked when it was sealed; the count must still fit.
    boolean positionsDense = end == ledgerSize && reached.position() == ledgerSize;
    List<StoreDamage> out = new ArrayList<>();
    headDamage(db, signer, ledgerSize, reached.chain(), positionsDense).ifPresent(out::add);
    out.addAll(runDamage);
    // Durable runs, under the same signed head (issue 23): checked whole on every audit.
    out.addAll(DurableAudit.damage(db));
    if (from.position() == 0) {
      out.addAll(unsignedRows(db, signer));
      out.addAll(contentDamage(db, "blobs"));
      out.addAll(contentDamage(db, "modules"));
    }
    return new Result(out, reached.position() - from.position(), ledgerSize, reached.chain());
  }

  /**
   * Rows the ledger does not sign (inserted behind the node's back), wherever they sort: a scan of
   * every run, so only the full check makes it. From a checkpoint the head's count stands in: a row
   * inserted makes the runs outnumber the ledger, and one inserted in place of a deleted run leaves
   * a ledger record without its row, which the run's own check names (after the checkpoint at once,
   * before it in the background pass); a read of such a row finds no ledger record and shows it as
   * tampered meanwhile.
   */
  private static List<StoreDamage> unsignedRows(Connection db, PublicKey signer)
      throws SQLException {
    List<StoreDamage> out = new ArrayList<>();
    try (PreparedStatement st =
        db.prepareStatement(
            "SELECT "
                + ROW_COLUMNS
                + " FROM runs r WHERE NOT EXISTS"
                + " (SELECT 1 FROM ledger l WHERE l.position = r.position"
                + " AND l.run_id = r.run_id)"
                + " ORDER BY r.created_ms, r.run_id")) {
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          checkRow(row(rs, 1), null, signer).ifPresent(out::add);
        }
      }
    }
    return out;
  }

  private static Optional<StoreDamage> headDamage(
      Connection db, PublicKey signer, long ledgerSize, String chain, boolean dense)
      throws SQLException {
    String headText = StoreLedger.headText(db).orElse(null);
    long runRows;
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM runs")) {
      rs.next();
      runRows = rs.getLong(1);
    }
    String store = StoreDamage.STORE;
    if (headText == null) {
      return ledgerSize == 0 && runRows == 0
          ? Optional.empty()
          : damage(
              store,
              "store_head",
              "the store holds "
                  + runRows
                  + " run(s) but no signed store head (deleted, or written by an older sandboxd)");
    }
    StoreHead head;
    try {
      Envelope env = Envelope.fromJson(CanonicalJson.parse(headText));
      if (env.verify(Optional.of(signer)) instanceof Verification.Invalid inv) {
        return damage(
            store, "store_head", "the signed store head does not verify: " + inv.reason());
      }
      head = StoreHead.fromCore(env.core());
    } catch (AttestException e) {
      return damage(store, "store_head", "the signed store head is unreadable: " + e.getMessage());
    }
    if (head.runs() != ledgerSize || head.runs() != runRows) {
      return damage(
          store,
          "runs",
          "the signed store head counts "
              + head.runs()
              + " run(s); the store holds "
              + runRows
              + " run row(s) and "
              + ledgerSize
              + " ledger record(s): a run was deleted or inserted");
    }
    if (!dense) {
      return damage(store, "ledger", "ledger positions are not dense from 0: reordered");
    }
    if (!head.chain().equals(chain)) {
      return damage(
          store,
          "ledger",
          "the hash chain over the ledger is "
              + chain
              + ", the signed head says "
              + head.chain()
              + ": a run was replaced, deleted or reordered");
    }
    return Optional.empty();
  }

  /**
   * The run's signed records, their links, and its journal against journal_root; at {@code depth}
   * SIGNED_HERE, records this process signed are taken as it wrote them (see {@link Depth}).
   */
  static Optional<StoreDamage> recordsDamage(
      RunReads reads, RunRow row, StoredRun s, PublicKey signer, Depth depth) throws SQLException {
    String runId = row.runId();
    if (s == null) {
      return damage(runId, "ledger", "its signed store record does not verify");
    }
    if (depth == Depth.SIGNED_HERE) {
      SignedHere here = signedHere(reads.records(), s, signer);
      if (here != null) {
        return row.pruned()
            ? Optional.empty()
            : journalDamage(reads.journal(), runId, here.journalRoot());
      }
    }
    List<Envelope> all = new ArrayList<>();
    Map<RecordKind, List<Envelope>> byKind = new EnumMap<>(RecordKind.class);
    for (RunReads.RecordRow rec : reads.records()) {
      Optional<RecordKind> stored = RecordKind.ofStored(rec.kind());
      if (stored.isEmpty()) {
        return damage(runId, "records", "a record of unknown kind \"" + rec.kind() + "\"");
      }
      RecordKind kind = stored.get();
      Envelope env;
      try {
        env = StoreEncoding.envelope(rec.envelope());
      } catch (AttestException e) {
        return damage(runId, kind.stored(), "unreadable envelope: " + e.getMessage());
      }
      if (!env.address().equals(rec.address())) {
        return damage(
            runId, kind.stored(), "the address column differs from the envelope's address");
      }
      all.add(env);
      byKind.computeIfAbsent(kind, k -> new ArrayList<>()).add(env);
    }
    EvidenceBundle.Verdict v = EvidenceBundle.verify(all, Set.of(signer));
    if (v instanceof EvidenceBundle.Verdict.Invalid inv) {
      return damage(runId, "records", inv.where() + ": " + inv.reason());
    }
    for (RecordKind kind : RecordKind.values()) {
      Optional<StoreDamage> named = named(runId, byKind, kind, s);
      if (named.isPresent()) {
        return named;
      }
    }
    Attestation a = Attestation.fromCore(byKind.get(RecordKind.ATTESTATION).get(0).core());
    if (!a.receipt().equals(s.receipt())) {
      return damage(runId, "attestation", "names receipt " + a.receipt() + ", not the run's");
    }
    if (!a.outcome().equals(s.outcome())) {
      return damage(runId, "outcome", "the signed store record and the attestation disagree");
    }
    if (!a.unit().equals(s.unit()) || !a.grantsId().equals(s.grantsId())) {
      return damage(runId, "attestation", "unit or grants_id differ from the store record");
    }
    // A pruned run's journal is gone on purpose; its root stays attested.
    return row.pruned() ? Optional.empty() : journalDamage(reads.journal(), runId, a.journalRoot());
  }

  /** What a run's records signed here say that the check still needs: its attested journal root. */
  private record SignedHere(String journalRoot) {}

  /**
   * The run's records read without their JSON, when each is one this process signed under {@code
   * signer} and exactly the one {@code s} names for its kind; null when any is not, or anything
   * else is off (the full check then examines the run and names what it finds).
   */
  private static SignedHere signedHere(
      List<RunReads.RecordRow> records, StoredRun s, PublicKey signer) {
    byte[] key = signer.raw();
    Map<RecordKind, byte[]> cores = new EnumMap<>(RecordKind.class);
    for (RunReads.RecordRow rec : records) {
      Optional<RecordKind> kind = RecordKind.ofStored(rec.kind());
      Optional<StoreEncoding.Signed> read;
      try {
        read = StoreEncoding.derived(rec.envelope());
      } catch (StoreEncodingException e) {
        return null;
      }
      if (kind.isEmpty() || read.isEmpty() || cores.containsKey(kind.get())) {
        return null;
      }
      StoreEncoding.Signed e = read.get();
      String address = Hex.encode(e.address());
      if (!address.equals(rec.address())
          || !address.equals(kind.get().signedAddress(s))
          || !Arrays.equals(e.publicKey(), key)
          || !Envelope.knownValid(key, e.address(), e.signature())) {
        return null;
      }
      cores.put(kind.get(), e.core());
    }
    if (cores.size() != RecordKind.values().length) {
      return null;
    }
    return journalRoot(cores.get(RecordKind.ATTESTATION));
  }

  /**
   * The top-level {@code journal_root} of an attestation core this process signed, found by
   * streaming over the core rather than building its tree (the check needs this one field); null
   * when it has none, it is neither a string nor null, or the core does not read.
   */
  private static SignedHere journalRoot(byte[] core) {
    try (JsonParser p = CanonicalJson.mapper().getFactory().createParser(core)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return null;
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken value = p.nextToken();
        if ("journal_root".equals(name)) {
          return switch (value) {
            case VALUE_NULL -> new SignedHere(null);
            case VALUE_STRING -> new SignedHere(p.getText());
            default -> null;
          };
        }
        p.skipChildren();
      }
      return null;
    } catch (IOException e) {
      return null;
    }
  }

  /** Exactly one record of {@code kind}, with the address the store record signed. */
  private static Optional<StoreDamage> named(
      String runId, Map<RecordKind, List<Envelope>> byKind, RecordKind kind, StoredRun s) {
    List<Envelope> l = byKind.getOrDefault(kind, List.of());
    if (l.size() != 1) {
      return damage(
          runId, kind.stored(), l.size() + " " + kind + " record(s); the store record signs one");
    }
    Envelope e = l.get(0);
    String address = kind.signedAddress(s);
    if (!e.address().equals(address) || e.schema().filter(kind.schema()::equals).isEmpty()) {
      return damage(
          runId,
          kind.stored(),
          "the record is " + e.address() + ", the store record signs " + address);
    }
    return Optional.empty();
  }

  /**
   * Whether the run's journal ({@code entries}, by sequence) has the merkle root {@code root}
   * (null: the attestation names no journal, so there must be none).
   */
  private static Optional<StoreDamage> journalDamage(
      List<RunReads.JournalRow> entries, String runId, String root) {
    if (root != null && root.equals(storedRoot(entries))) {
      return Optional.empty();
    }
    // Not the attested root as stored: read each entry to name what is wrong (one not dense, one
    // that does not read), or find that a stored entry that is not canonical still canonicalizes
    // to the attested leaf, which the check has always accepted.
    List<byte[]> leaves = new ArrayList<>();
    for (RunReads.JournalRow e : entries) {
      if (e.seq() != leaves.size()) {
        return damage(runId, "journal", "entry seq " + e.seq() + " is not dense");
      }
      try {
        JsonNode entry = CanonicalJson.parse(new String(e.entry(), StandardCharsets.UTF_8));
        leaves.add(Blake3.hash(CanonicalJson.canonicalize(entry)));
      } catch (AttestException x) {
        return damage(runId, "journal", "entry " + leaves.size() + ": " + x.getMessage());
      }
    }
    String computed = Hex.encode(MerkleTree.blake3(leaves).root());
    if (root == null ? !leaves.isEmpty() : !root.equals(computed)) {
      return damage(
          runId, "journal", "the journal's root " + computed + " is not the attested " + root);
    }
    return Optional.empty();
  }

  /**
   * The merkle root over the entries' bytes as stored, when their sequences are dense from 0 (else
   * null). The store keeps each entry's canonical bytes, the leaf's input, so for an intact journal
   * this is the attested root without reading any entry as JSON; bytes that differ from the
   * canonical ones by so much as a space hash to another root.
   */
  private static String storedRoot(List<RunReads.JournalRow> entries) {
    List<byte[]> leaves = new ArrayList<>(entries.size());
    for (RunReads.JournalRow e : entries) {
      if (e.seq() != leaves.size()) {
        return null;
      }
      leaves.add(Blake3.hash(e.entry()));
    }
    return Hex.encode(MerkleTree.blake3(leaves).root());
  }

  /** Content-addressed rows whose bytes do not hash to their address. */
  static List<StoreDamage> contentDamage(Connection db, String table) throws SQLException {
    List<StoreDamage> out = new ArrayList<>();
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("SELECT address, bytes FROM " + table)) {
      while (rs.next()) {
        String address = rs.getString(1);
        if (!Blake3.hex(rs.getBytes(2)).equals(address)) {
          out.add(
              new StoreDamage(
                  StoreDamage.STORE, table, address + ": the bytes do not hash to their address"));
        }
      }
    }
    return out;
  }

  /** The {@code runs} rows (all, or one), each with its chain's length and head address. */
  static List<RunRow> rows(Connection db, String onlyRunId) throws SQLException {
    String sql =
        "SELECT "
            + ROW_COLUMNS
            + " FROM runs r"
            + (onlyRunId == null ? "" : " WHERE r.run_id = ?")
            + " ORDER BY r.created_ms, r.run_id";
    List<RunRow> out = new ArrayList<>();
    try (PreparedStatement st = db.prepareStatement(sql)) {
      if (onlyRunId != null) {
        st.setString(1, onlyRunId);
      }
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          out.add(row(rs, 1));
        }
      }
    }
    return out;
  }

  /** The columns {@link #row} reads, over {@code runs r}. */
  static final String ROW_COLUMNS =
      "r.run_id, r.created_ms, r.unit, r.grants_id, r.outcome, r.log, r.grants, r.entry,"
          + " "
          + RecordRows.ofRow("r", "COUNT(*)", "+kind = '" + RecordKind.SEGMENT.stored() + "'", "")
          + ", "
          + RecordRows.ofRow(
              "r",
              "address",
              "+kind = '" + RecordKind.SEGMENT.stored() + "'",
              " ORDER BY seq DESC LIMIT 1")
          + ","
          + " EXISTS (SELECT 1 FROM pruned p WHERE p.run_id = r.run_id)";

  /** Reads a {@link RunRow} from the 11 {@link #ROW_COLUMNS} starting at {@code first}. */
  static RunRow row(ResultSet rs, int first) throws SQLException {
    return new RunRow(
        rs.getString(first),
        rs.getLong(first + 1),
        rs.getString(first + 2),
        rs.getString(first + 3),
        rs.getString(first + 4),
        rs.getString(first + 5),
        rs.getString(first + 6),
        rs.getString(first + 7),
        rs.getInt(first + 8),
        rs.getString(first + 9),
        rs.getBoolean(first + 10));
  }
}
