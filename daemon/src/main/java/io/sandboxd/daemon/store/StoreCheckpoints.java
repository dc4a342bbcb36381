package io.sandboxd.daemon.store;

import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.StoreCheckpoint;
import io.sandboxd.attest.StoreHead;
import io.sandboxd.attest.Verification;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What the store has verified of itself: the sealed verification checkpoint (start-up checks only
 * the runs after it), the signed store head, and the checks that move the checkpoint forward.
 */
final class StoreCheckpoints {
  private final StoreDb store;
  private final SigningKey key;
  private final LogCheckpoints log;
  private final RunTable runs;
  private final ParallelRunCheck.Readers readers;

  /** {@code readers} opens the read-only connections a parallel start-up check works on. */
  StoreCheckpoints(
      StoreDb store,
      SigningKey key,
      LogCheckpoints log,
      RunTable runs,
      ParallelRunCheck.Readers readers) {
    this.store = store;
    this.key = key;
    this.log = log;
    this.runs = runs;
    this.readers = readers;
  }

  /** The whole store checked against the node's records; damaged runs are remembered. */
  List<StoreDamage> verifyAll() {
    synchronized (store.lock()) {
      List<StoreDamage> found =
          store.transact("run store: cannot verify", db -> StoreAudit.audit(db, key.publicKey()));
      runs.remember(found, true);
      return found;
    }
  }

  /** The start-up check from the sealed checkpoint (see {@link RunStore#verifyFromCheckpoint}). */
  RunStore.StartupCheck verifyFromCheckpoint() {
    return verifyFromCheckpoint(Runtime.getRuntime().availableProcessors());
  }

  /**
   * As above, the runs after the checkpoint checked on min({@code cores}, their number) threads:
   * the same damage in the same order as on one (the ledger is still read, and the chain extended,
   * in order on the store's connection; only each run's own check moves to a worker).
   */
  RunStore.StartupCheck verifyFromCheckpoint(int cores) {
    synchronized (store.lock()) {
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
      StoreAudit.Start start = from;
      StoreAudit.Result r =
          store.transact(
              "run store: cannot verify",
              db -> {
                int threads = (int) Math.min(cores, runsFrom(db, start.position()));
                if (threads < 2) {
                  return StoreAudit.audit(db, key.publicKey(), start, null);
                }
                try (ParallelRunCheck parallel =
                    new ParallelRunCheck(key.publicKey(), threads, readers)) {
                  return StoreAudit.audit(db, key.publicKey(), start, null, parallel);
                }
              });
      found.addAll(r.damage());
      runs.remember(found, true);
      if (found.isEmpty() && r.checked() > 0) {
        seal(r.ledgerSize(), r.chain());
      }
      return new RunStore.StartupCheck(found, from.position(), r.checked(), r.ledgerSize());
    }
  }

  /** How many ledger records lie at or after {@code position}: the runs a check from it reads. */
  private static long runsFrom(java.sql.Connection db, long position) throws java.sql.SQLException {
    return StoreDb.first(
            db, "SELECT COUNT(*) FROM ledger WHERE position >= ?", rs -> rs.getLong(1), position)
        .orElse(0L);
  }

  /**
   * The sealed checkpoint, verified; empty when none was sealed; one that does not verify throws.
   */
  Optional<StoreCheckpoint> checkpoint() {
    Optional<String> text =
        store.firstRow(
            "run store: cannot read its checkpoint",
            "SELECT envelope FROM store_checkpoint WHERE id = 1",
            rs -> rs.getString(1));
    if (text.isEmpty()) {
      return Optional.empty();
    }
    try {
      Envelope env = Envelope.fromJson(CanonicalJson.parse(text.get()));
      if (env.verify(Optional.of(key.publicKey())) instanceof Verification.Invalid inv) {
        throw new StoreException("the sealed checkpoint does not verify: " + inv.reason());
      }
      return Optional.of(StoreCheckpoint.fromCore(env.core()));
    } catch (io.sandboxd.attest.AttestException e) {
      throw new StoreException("the sealed checkpoint is unreadable: " + e.getMessage(), e);
    }
  }

  /** Seals a checkpoint at ledger position {@code runs}; never moves it back; whether it moved. */
  boolean seal(long runsVerified, String chain) {
    synchronized (store.lock()) {
      long current;
      try {
        current = checkpoint().map(StoreCheckpoint::runs).orElse(-1L);
      } catch (StoreException e) {
        current = -1; // a damaged checkpoint is replaced by one a clean check sealed
      }
      if (runsVerified <= current) {
        return false;
      }
      StoreCheckpoint cp = new StoreCheckpoint(runsVerified, chain, System.currentTimeMillis());
      NodeLog.Mark before = log.mark();
      return store.transact(
          "run store: cannot seal a checkpoint",
          () -> log.reset(before),
          db -> {
            try (PreparedStatement st =
                db.prepareStatement(
                    "INSERT OR REPLACE INTO store_checkpoint (id, envelope) VALUES (1, ?)")) {
              Envelope env = Envelope.sign(cp.toCore(), key);
              st.setString(1, env.toJsonLine());
              st.executeUpdate();
              log.append(NodeLog.STORE_CHECKPOINT, env.address());
              return true;
            }
          });
    }
  }

  /** The signed store head's line for the log: run count and chain, or none for an empty store. */
  String headLine() {
    return store.transact(
        "run store: cannot read its head",
        db -> {
          Optional<Envelope> env = head(db);
          if (env.isEmpty()) {
            return "no signed head (empty store)";
          }
          StoreHead h = StoreHead.fromCore(env.get().core());
          return "head "
              + env.get().address()
              + " ("
              + h.runs()
              + " runs, chain "
              + h.chain()
              + ")";
        });
  }

  /** How many runs the signed store head counts (0 for an empty store); O(1), not verified. */
  long headRuns() {
    return store.transact(
        "run store: cannot read its head",
        db -> head(db).map(e -> StoreHead.fromCore(e.core()).runs()).orElse(0L));
  }

  private static Optional<Envelope> head(java.sql.Connection db) throws java.sql.SQLException {
    Optional<String> text = StoreLedger.headText(db);
    return text.isPresent()
        ? Optional.of(Envelope.fromJson(CanonicalJson.parse(text.get())))
        : Optional.empty();
  }
}
