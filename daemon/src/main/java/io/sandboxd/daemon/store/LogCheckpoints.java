package io.sandboxd.daemon.store;

import io.sandboxd.attest.ConsistencyProof;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.LogCheckpoint;
import io.sandboxd.attest.LogTree;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.TreeHead;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The node log's signed C2SP checkpoints and the proofs against them (issue 14): when a checkpoint
 * is due, inclusion and consistency proofs, and the leaves other tables add in their transactions.
 */
final class LogCheckpoints {
  private static final Logger LOG = Logger.getLogger(LogCheckpoints.class.getName());

  private final StoreDb store;
  private final NodeLog log;
  private final SigningKey key;

  LogCheckpoints(StoreDb store, NodeLog log, SigningKey key) {
    this.store = store;
    this.log = log;
    this.key = key;
  }

  void configure(String origin, long everyRecords, long everyMs, boolean enabled) {
    synchronized (store.lock()) {
      log.policy(new NodeLog.Policy(origin, everyRecords, everyMs, enabled));
    }
  }

  String origin() {
    synchronized (store.lock()) {
      return log.policy().origin();
    }
  }

  long size() {
    synchronized (store.lock()) {
      return log.size();
    }
  }

  /** The log before a transaction (lock held), for {@link #reset} when it rolls back. */
  NodeLog.Mark mark() {
    return log.mark();
  }

  /** Undoes the leaves of a transaction that was rolled back (lock held). */
  void reset(NodeLog.Mark before) {
    log.reset(before);
  }

  /**
   * Inside an append's transaction (lock held): signs a checkpoint if one is due, in a savepoint,
   * so that a checkpoint that cannot be signed does not take the runs with it.
   */
  void checkpointIfDue() throws SQLException {
    long now = System.currentTimeMillis();
    if (!log.due(now)) {
      return;
    }
    var db = store.connection();
    Savepoint sp = db.setSavepoint();
    NodeLog.Mark before = log.mark();
    try {
      log.checkpoint(key, now);
      db.releaseSavepoint(sp);
    } catch (SQLException | RuntimeException e) {
      store.rollback(sp, e);
      log.reset(before);
      LOG.warning("node log: checkpoint not signed: " + e.getMessage());
    }
  }

  /** Signs a checkpoint if the interval passed with new leaves (the daemon's timer calls it). */
  boolean checkpointIfDueNow() {
    return signing(
        db -> {
          if (!log.due(System.currentTimeMillis())) {
            return false;
          }
          log.checkpoint(key, System.currentTimeMillis());
          return true;
        });
  }

  /** The newest checkpoint, first signing one at the current size if the log grew since. */
  RunStore.LogNote latest() {
    return signing(
        db -> {
          String note = log.checkpoint(key, System.currentTimeMillis());
          return new RunStore.LogNote(log.size(), note);
        });
  }

  /**
   * {@code work} in a transaction that may sign a checkpoint: rolled back, the log is as before.
   */
  private <T> T signing(StoreDb.Work<T> work) {
    synchronized (store.lock()) {
      NodeLog.Mark before = log.mark();
      return store.transact("node log: cannot sign a checkpoint", () -> log.reset(before), work);
    }
  }

  /** The inclusion proof of the record {@code address} against the newest checkpoint. */
  RunStore.LogInclusion prove(String address) {
    if (!Hex.isHex(address, 32)) {
      throw new LogInputException("address: expected 64 lowercase hex characters");
    }
    synchronized (store.lock()) {
      RunStore.LogNote cp = latest();
      return store.transact(
          "node log: cannot prove " + address,
          db -> {
            Optional<NodeLog.Leaf> leaf = log.find(address);
            if (leaf.isEmpty() || leaf.get().index() >= cp.treeSize()) {
              throw new LogNotFoundException("record " + address + " is not in the node log");
            }
            var proof =
                LogTree.inclusionProof(
                    NodeLog.HASH, log.nodes(), leaf.get().index(), cp.treeSize());
            return new RunStore.LogInclusion(cp.note(), address, leaf.get().kind(), proof);
          });
    }
  }

  /** The consistency proof from size {@code m} to {@code n}, with a checkpoint signed for each. */
  RunStore.LogConsistency consistency(long m, long n) {
    synchronized (store.lock()) {
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
      return store.transact(
          "node log: cannot prove consistency",
          db -> {
            var nodes = log.nodes();
            String origin = log.policy().origin();
            String oldNote = noteAt(origin, nodes, m);
            String newNote = noteAt(origin, nodes, n);
            ConsistencyProof proof = LogTree.consistencyProof(NodeLog.HASH, nodes, m, n);
            return new RunStore.LogConsistency(oldNote, newNote, proof);
          });
    }
  }

  // A checkpoint for an earlier size is the same tree head the log had then: consistent with
  // every checkpoint the log signs, so signing it on request is safe.
  private String noteAt(String origin, LogTree.Nodes nodes, long size) {
    byte[] root = LogTree.root(NodeLog.HASH, nodes, size);
    return LogCheckpoint.of(origin, new TreeHead(size, root)).sign(key);
  }

  /** Logs records the store does not hold (environment manifests): each address once. */
  void appendAddresses(String kind, List<String> addresses) {
    synchronized (store.lock()) {
      NodeLog.Mark before = log.mark();
      store.transact(
          "node log: records not logged",
          () -> log.reset(before),
          db -> {
            for (String a : addresses) {
              if (!log.contains(a)) {
                log.append(kind, a);
              }
            }
            return null;
          });
    }
  }

  /** Appends one leaf in the open transaction (lock held). */
  void append(String kind, String address) throws SQLException {
    log.append(kind, address);
  }

  /** Appends one leaf of a record logged only here, once, in the open transaction (lock held). */
  void appendOnce(String kind, String address) throws SQLException {
    log.appendOnce(kind, address);
  }

  /**
   * Logs, in the open transaction, each of {@code records} this node signed, once: segments,
   * receipts and attestations stored by other tables (durable runs). Records signed by another node
   * (an imported run) are that node's, not this one's, and stay out of its log.
   */
  void logOwn(List<Envelope> records) throws SQLException {
    String me = key.publicKey().hex();
    for (Envelope e : records) {
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
}
