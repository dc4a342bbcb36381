package io.sandboxd.daemon.store;

import static io.sandboxd.daemon.store.StoreDb.all;
import static io.sandboxd.daemon.store.StoreDb.first;
import static io.sandboxd.daemon.store.StoreDb.update;

import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The run store's JCP tables (WIRE.md §2.11): held parent grants, registered mint policies, the
 * children minted under each (their count and mint times are the policy's mint state, so a restart
 * resets neither), and each run's checkpoints and applied amendments. Every write is one fsynced
 * transaction; the signed envelopes are stored as canonical JSON lines.
 */
public final class JcpTable {
  static final List<String> DDL =
      List.of(
          "CREATE TABLE IF NOT EXISTS jcp_parents (grants_id TEXT PRIMARY KEY,"
              + " grants TEXT NOT NULL, held INTEGER NOT NULL)",
          "CREATE TABLE IF NOT EXISTS jcp_policies (address TEXT PRIMARY KEY,"
              + " parent_grants_id TEXT NOT NULL, envelope TEXT NOT NULL, added_ms INTEGER NOT NULL)",
          "CREATE TABLE IF NOT EXISTS jcp_children (policy TEXT NOT NULL, seq INTEGER NOT NULL,"
              + " address TEXT NOT NULL UNIQUE, grants_id TEXT NOT NULL, minted_ms INTEGER NOT NULL,"
              + " envelope TEXT NOT NULL, PRIMARY KEY (policy, seq))",
          "CREATE INDEX IF NOT EXISTS jcp_children_by_grants ON jcp_children (grants_id)",
          "CREATE TABLE IF NOT EXISTS jcp_checkpoints (run_id TEXT NOT NULL, seq INTEGER NOT NULL,"
              + " address TEXT NOT NULL UNIQUE, envelope TEXT NOT NULL, PRIMARY KEY (run_id, seq))",
          "CREATE TABLE IF NOT EXISTS jcp_amendments (address TEXT PRIMARY KEY,"
              + " run_id TEXT NOT NULL, applied_ms INTEGER NOT NULL, envelope TEXT NOT NULL)",
          "CREATE INDEX IF NOT EXISTS jcp_amendments_by_run ON jcp_amendments (run_id, applied_ms)");

  /** Migration 12: child uses and releases, and remembered event nonces. */
  static final List<String> USE_DDL =
      List.of(
          "CREATE TABLE IF NOT EXISTS jcp_child_uses (child TEXT PRIMARY KEY,"
              + " uses INTEGER NOT NULL, released INTEGER NOT NULL)",
          "CREATE TABLE IF NOT EXISTS jcp_event_nonces (signer TEXT NOT NULL, nonce TEXT NOT NULL,"
              + " expires_ms INTEGER NOT NULL, PRIMARY KEY (signer, nonce))",
          "CREATE INDEX IF NOT EXISTS jcp_event_nonces_by_expiry ON jcp_event_nonces (expires_ms)");

  /**
   * Migration 14: the policy and child records an imported run's bundle carried (its checkpoints
   * and amendments go to their own tables). Apart from the node's own policies and children, so
   * that nothing is ever minted or counted under another node's policy.
   */
  static final List<String> CARRIED_DDL =
      List.of(
          "CREATE TABLE IF NOT EXISTS jcp_carried (run_id TEXT NOT NULL, seq INTEGER NOT NULL,"
              + " address TEXT NOT NULL, envelope TEXT NOT NULL, PRIMARY KEY (run_id, seq))");

  private final RunStore store;

  public JcpTable(RunStore store) {
    this.store = store;
  }

  /** A registered policy with its parent grant (canonical JSON) and whether that is still held. */
  public record Policy(Envelope envelope, String parentJson, boolean parentHeld) {}

  /** What the mint decision needs of a policy's history. */
  public record History(long minted, String lastAddress, long lastMintedMs, List<Long> recentMs) {}

  /** A minted child and the policy it was minted under. */
  public record Child(Envelope envelope, Envelope policy) {}

  /** Registers {@code policy}; returns true when it was already registered. */
  public boolean addPolicy(
      String parentGrantsId, String parentJson, Envelope policy, long addedMs) {
    return store.transact(
        "mint policy " + policy.address() + " not stored",
        db -> {
          update(
              db,
              "INSERT OR IGNORE INTO jcp_parents (grants_id, grants, held) VALUES (?,?,1)",
              parentGrantsId,
              parentJson);
          return update(
                  db,
                  "INSERT OR IGNORE INTO jcp_policies (address, parent_grants_id, envelope,"
                      + " added_ms) VALUES (?,?,?,?)",
                  policy.address(),
                  parentGrantsId,
                  policy.toJsonLine(),
                  addedMs)
              == 0;
        });
  }

  /** How many policies are registered. */
  public long policies() {
    return store.transact("cannot count mint policies", db -> count(db, "jcp_policies"));
  }

  public Optional<Policy> policy(String address) {
    return store.firstRow(
        "cannot read mint policy " + address,
        "SELECT p.envelope, g.grants, g.held FROM jcp_policies p JOIN jcp_parents g"
            + " ON g.grants_id = p.parent_grants_id WHERE p.address = ?",
        rs -> new Policy(envelope(rs.getString(1)), rs.getString(2), rs.getInt(3) != 0),
        address);
  }

  /** Stops holding a parent grant; returns how many policies name it. */
  public int releaseParent(String grantsId) {
    return store.transact(
        "cannot release parent " + grantsId,
        db -> {
          if (update(db, "UPDATE jcp_parents SET held = 0 WHERE grants_id = ?", grantsId) == 0) {
            return -1;
          }
          return first(
                  db,
                  "SELECT COUNT(*) FROM jcp_policies WHERE parent_grants_id = ?",
                  rs -> rs.getInt(1),
                  grantsId)
              .orElseThrow();
        });
  }

  /**
   * The policy's mint count, its last child, and the mint times of its latest {@code recent}
   * children, oldest first (the rate window never needs more than its {@code max}).
   */
  public History history(String policy, long recent) {
    return store.transact(
        "cannot read the children of " + policy,
        db -> {
          record Minted(long seq, String address, long mintedMs) {}
          List<Minted> latest =
              all(
                  db,
                  "SELECT seq, address, minted_ms FROM jcp_children WHERE policy = ?"
                      + " ORDER BY seq DESC LIMIT ?",
                  rs -> new Minted(rs.getLong(1), rs.getString(2), rs.getLong(3)),
                  policy,
                  Math.max(1, Math.min(recent, Integer.MAX_VALUE)));
          if (latest.isEmpty()) {
            return new History(0, null, 0, new ArrayList<>());
          }
          List<Long> times = new ArrayList<>();
          for (Minted m : latest) {
            times.add(0, m.mintedMs());
          }
          Minted last = latest.get(0);
          return new History(last.seq() + 1, last.address(), last.mintedMs(), times);
        });
  }

  /** An authenticated event's nonce, remembered until {@code expiresMs}. */
  public record Nonce(String signer, String nonce, long expiresMs) {}

  /**
   * Appends a minted child and remembers the nonce of the event that minted it, in one fsynced
   * transaction: a crash never leaves a child whose event could mint again.
   */
  public void appendChild(
      String policy, long seq, Envelope child, String grantsId, long mintedMs, Nonce nonce) {
    store.transact(
        "child " + seq + " of " + policy + " not stored",
        db -> {
          update(
              db,
              "INSERT INTO jcp_event_nonces (signer, nonce, expires_ms) VALUES (?,?,?)",
              nonce.signer(),
              nonce.nonce(),
              nonce.expiresMs());
          return update(
              db,
              "INSERT INTO jcp_children (policy, seq, address, grants_id, minted_ms, envelope)"
                  + " VALUES (?,?,?,?,?,?)",
              policy,
              seq,
              child.address(),
              grantsId,
              mintedMs,
              child.toJsonLine());
        });
  }

  /** How a minted child has been used: runs started under it, and whether it was released. */
  public record Use(long uses, boolean released) {}

  public Use use(String child) {
    return store
        .firstRow(
            "cannot read the uses of child " + child,
            "SELECT uses, released FROM jcp_child_uses WHERE child = ?",
            rs -> new Use(rs.getLong(1), rs.getInt(2) != 0),
            child)
        .orElse(new Use(0, false));
  }

  /** Counts one run started under {@code child} (fsynced before it returns). */
  public void countUse(String child) {
    store.transact(
        "use of child " + child + " not stored",
        db ->
            update(
                db,
                "INSERT INTO jcp_child_uses (child, uses, released) VALUES (?,1,0)"
                    + " ON CONFLICT (child) DO UPDATE SET uses = uses + 1",
                child));
  }

  /** Releases every child minted with {@code grantsId}; returns how many there are. */
  public int releaseChildren(String grantsId) {
    return store.transact(
        "cannot release children " + grantsId,
        db -> {
          List<String> children =
              all(
                  db,
                  "SELECT address FROM jcp_children WHERE grants_id = ?",
                  rs -> rs.getString(1),
                  grantsId);
          for (String c : children) {
            update(
                db,
                "INSERT INTO jcp_child_uses (child, uses, released) VALUES (?,0,1)"
                    + " ON CONFLICT (child) DO UPDATE SET released = 1",
                c);
          }
          return children.size();
        });
  }

  /**
   * Forgets the nonces expired at {@code nowMs} and says whether {@code signer} used {@code nonce}
   * before, and how many nonces are still remembered.
   */
  public record Nonces(boolean seen, long remembered) {}

  public Nonces nonces(String signer, String nonce, long nowMs) {
    return store.transact(
        "cannot read event nonces",
        db -> {
          update(db, "DELETE FROM jcp_event_nonces WHERE expires_ms < ?", nowMs);
          boolean seen =
              first(
                      db,
                      "SELECT 1 FROM jcp_event_nonces WHERE signer = ? AND nonce = ?",
                      rs -> true,
                      signer,
                      nonce)
                  .isPresent();
          return new Nonces(seen, count(db, "jcp_event_nonces"));
        });
  }

  /** The latest child minted with {@code grantsId}, with its policy. */
  public Optional<Child> childByGrantsId(String grantsId) {
    return store.firstRow(
        "cannot read minted children",
        "SELECT c.envelope, p.envelope FROM jcp_children c JOIN jcp_policies p"
            + " ON p.address = c.policy WHERE c.grants_id = ?"
            + " ORDER BY c.minted_ms DESC, c.rowid DESC LIMIT 1",
        rs -> new Child(envelope(rs.getString(1)), envelope(rs.getString(2))),
        grantsId);
  }

  /** A stored policy or minted child by its address. */
  public Optional<Envelope> record(String address) {
    return store.transact(
        "cannot read JCP record " + address,
        db -> {
          for (String sql :
              List.of(
                  "SELECT envelope FROM jcp_policies WHERE address = ?",
                  "SELECT envelope FROM jcp_children WHERE address = ?")) {
            List<Envelope> found = list(db, sql, address);
            if (!found.isEmpty()) {
              return Optional.of(found.get(0));
            }
          }
          return Optional.<Envelope>empty();
        });
  }

  /** The run's checkpoints in chain order. */
  public List<Envelope> checkpoints(String runId) {
    return store.transact(
        "cannot read the checkpoints of " + runId,
        db ->
            list(db, "SELECT envelope FROM jcp_checkpoints WHERE run_id = ? ORDER BY seq", runId));
  }

  public void appendCheckpoint(String runId, long seq, Envelope checkpoint) {
    store.transact(
        "checkpoint " + seq + " of " + runId + " not stored",
        db -> insert(db, "jcp_checkpoints", runId, seq, checkpoint));
  }

  /** The amendments applied to the run, in the order they were applied. */
  public List<Envelope> amendments(String runId) {
    return store.transact(
        "cannot read the amendments of " + runId,
        db ->
            list(
                db,
                "SELECT envelope FROM jcp_amendments WHERE run_id = ? ORDER BY applied_ms, rowid",
                runId));
  }

  public void appendAmendment(String runId, Envelope amendment, long appliedMs) {
    store.transact(
        "amendment " + amendment.address() + " not stored",
        db -> insertAmendment(db, runId, amendment, appliedMs));
  }

  /**
   * Stores the JCP records a run bundle carried for {@code runId}, in one fsynced transaction:
   * {@code evidence} (its mint policy and child) as carried records, {@code checkpoints} and {@code
   * amendments} (in the order applied) as the run's own. Rows an interrupted import left for the
   * run id (no run was stored with them) are replaced, so only this bundle's records remain.
   */
  public void carry(
      String runId,
      List<Envelope> evidence,
      List<Envelope> checkpoints,
      List<Envelope> amendments,
      long nowMs) {
    store.transact(
        "JCP records of imported run " + runId + " not stored",
        db -> {
          for (String t : List.of("jcp_carried", "jcp_checkpoints", "jcp_amendments")) {
            update(db, "DELETE FROM " + t + " WHERE run_id = ?", runId);
          }
          insertAll(db, "jcp_carried", runId, evidence);
          insertAll(db, "jcp_checkpoints", runId, checkpoints);
          for (Envelope a : amendments) {
            // One time for all: the rowid keeps them in the order they were applied.
            insertAmendment(db, runId, a, nowMs);
          }
          return null;
        });
  }

  private static int insertAmendment(Connection db, String runId, Envelope a, long appliedMs)
      throws SQLException {
    return update(
        db,
        "INSERT INTO jcp_amendments (address, run_id, applied_ms, envelope) VALUES (?,?,?,?)",
        a.address(),
        runId,
        appliedMs,
        a.toJsonLine());
  }

  private static void insertAll(Connection db, String table, String runId, List<Envelope> rows)
      throws SQLException {
    for (int i = 0; i < rows.size(); i++) {
      insert(db, table, runId, i, rows.get(i));
    }
  }

  private static int insert(Connection db, String table, String runId, long seq, Envelope row)
      throws SQLException {
    return update(
        db,
        "INSERT INTO " + table + " (run_id, seq, address, envelope) VALUES (?,?,?,?)",
        runId,
        seq,
        row.address(),
        row.toJsonLine());
  }

  /** The policy and child records a bundle carried for the imported run, in bundle order. */
  public List<Envelope> carried(String runId) {
    return store.transact(
        "cannot read the carried JCP records of " + runId,
        db -> list(db, "SELECT envelope FROM jcp_carried WHERE run_id = ? ORDER BY seq", runId));
  }

  private static List<Envelope> list(Connection db, String sql, String key) throws SQLException {
    return all(db, sql, rs -> envelope(rs.getString(1)), key);
  }

  private static long count(Connection db, String table) throws SQLException {
    return first(db, "SELECT COUNT(*) FROM " + table, rs -> rs.getLong(1)).orElseThrow();
  }

  private static Envelope envelope(String json) {
    return Envelope.fromJson(CanonicalJson.parse(json));
  }
}
