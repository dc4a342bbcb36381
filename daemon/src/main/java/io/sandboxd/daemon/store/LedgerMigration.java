package io.sandboxd.daemon.store;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.StoredRun;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Schema version 2: the signed ledger and store head, and retention's {@code pruned} table and
 * blob-user index. A version-1 store has runs but no ledger, which start-up refuses; this migration
 * makes it usable by checking each run's segment, receipt and attestation (and journal, and the
 * columns they bind) against the node's key exactly as start-up does, and only then signing the run
 * into the ledger. The ledger so attests the store's content as found at upgrade time: columns no
 * version-1 record signs (log, grants, entry, created_ms) are taken as they were on disk then. A
 * run that does not verify fails the whole upgrade, naming the run: tampered data is never blessed.
 */
final class LedgerMigration {
  private LedgerMigration() {}

  static final List<String> DDL =
      List.of(
          "CREATE TABLE IF NOT EXISTS pruned (run_id TEXT PRIMARY KEY,"
              + " pruned_ms INTEGER NOT NULL, reason TEXT NOT NULL)",
          "CREATE INDEX IF NOT EXISTS journal_by_response"
              + " ON journal (json_extract(entry, '$.response'))",
          // One signed sandbox.store-run/1 record per run, in append order.
          "CREATE TABLE IF NOT EXISTS ledger (position INTEGER PRIMARY KEY,"
              + " run_id TEXT NOT NULL UNIQUE, envelope TEXT NOT NULL)",
          // The signed sandbox.store-head/1: run count and hash chain over the ledger.
          "CREATE TABLE IF NOT EXISTS store_head (id INTEGER PRIMARY KEY CHECK (id = 1),"
              + " envelope TEXT NOT NULL)");

  static void apply(Connection db, SigningKey key) throws SQLException {
    // The first release's runs table lacked these; later version-1 stores have them.
    addColumnIfMissing(db, "grants");
    addColumnIfMissing(db, "entry");
    // The audit below reads a run's records as this code does, in both of their tables.
    RecordRows.addTable(db);
    try (Statement st = db.createStatement()) {
      for (String s : DDL) {
        st.execute(s);
      }
    }
    try (Statements q = new Statements(db)) {
      StoreLedger ledger = StoreLedger.open(db, q);
      long position = ledger.size();
      if (position != 0) {
        throw new StoreException("the ledger already holds " + position + " record(s)");
      }
      for (StoreAudit.RunRow row : StoreAudit.rows(db, null)) {
        StoredRun s = unsigned(db, row, position);
        Optional<StoreDamage> d = StoreAudit.rowDamage(row, s);
        if (d.isEmpty()) {
          d =
              StoreAudit.recordsDamage(
                  RunReads.of(q, row.runId()), row, s, key.publicKey(), StoreAudit.Depth.FULL);
        }
        if (d.isPresent()) {
          throw refusal(d.get());
        }
        ledger.append(s);
        position++;
      }
      if (position > 0) {
        ledger.signHead(key);
      }
    }
    List<StoreDamage> content = new ArrayList<>(StoreAudit.contentDamage(db, "blobs"));
    content.addAll(StoreAudit.contentDamage(db, "modules"));
    if (!content.isEmpty()) {
      throw refusal(content.get(0));
    }
  }

  private static StoreException refusal(StoreDamage d) {
    return new StoreException(
        d
            + " (checked against this node's key); the upgrade signs every run into the node's"
            + " ledger and refuses to sign one it cannot verify");
  }

  /**
   * The store record the run would be signed as: its row's columns, its records' addresses, and the
   * outcome its attestation states.
   */
  private static StoredRun unsigned(Connection db, StoreAudit.RunRow row, long position)
      throws SQLException {
    Map<RecordKind, List<Envelope>> byKind = new EnumMap<>(RecordKind.class);
    try (PreparedStatement st =
        db.prepareStatement("SELECT kind, envelope FROM records WHERE run_id = ? ORDER BY seq")) {
      st.setString(1, row.runId());
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          String text = rs.getString(1);
          RecordKind kind =
              RecordKind.ofStored(text).orElseThrow(() -> refusal(unknownKind(row.runId(), text)));
          byKind.computeIfAbsent(kind, k -> new ArrayList<>()).add(envelope(row, rs.getBytes(2)));
        }
      }
    }
    for (RecordKind kind : RecordKind.values()) {
      int n = byKind.getOrDefault(kind, List.of()).size();
      if (n != 1) {
        throw refusal(
            new StoreDamage(row.runId(), kind.stored(), n + " " + kind + " record(s), not one"));
      }
    }
    Attestation a;
    try {
      a = Attestation.fromCore(byKind.get(RecordKind.ATTESTATION).get(0).core());
    } catch (AttestException e) {
      throw refusal(new StoreDamage(row.runId(), "attestation", e.getMessage()));
    }
    return new StoredRun(
        position,
        row.runId(),
        row.createdMs(),
        row.unit(),
        row.grantsId(),
        a.outcome(),
        row.entry(),
        StoredRun.textAddress(row.grants()),
        StoredRun.textAddress(row.log()),
        StoredRun.textBytes(row.log()),
        byKind.get(RecordKind.SEGMENT).get(0).address(),
        byKind.get(RecordKind.RECEIPT).get(0).address(),
        byKind.get(RecordKind.ATTESTATION).get(0).address());
  }

  private static StoreDamage unknownKind(String runId, String kind) {
    return new StoreDamage(
        runId, "records", "a record of kind \"" + kind + "\", which sandboxd never writes");
  }

  private static Envelope envelope(StoreAudit.RunRow row, byte[] stored) {
    try {
      return StoreEncoding.envelope(stored);
    } catch (AttestException e) {
      throw refusal(
          new StoreDamage(row.runId(), "records", "unreadable envelope: " + e.getMessage()));
    }
  }

  private static void addColumnIfMissing(Connection db, String column) throws SQLException {
    if (StoreSchema.hasColumn(db, "runs", column)) {
      return;
    }
    try (Statement st = db.createStatement()) {
      st.execute("ALTER TABLE runs ADD COLUMN " + column + " TEXT NOT NULL DEFAULT ''");
    }
  }
}
