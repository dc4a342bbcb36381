package io.sandboxd.daemon.store;

import io.sandboxd.attest.SigningKey;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;

/**
 * Group commit of runs: runs appended while another commit is in progress are written together in
 * the next transaction, one fsync and one signed store head for the batch, each run in its own
 * savepoint so that a run that cannot be stored fails alone. A caller returns only after the commit
 * that holds its run.
 */
final class GroupCommit {
  /** Most runs one commit takes (bounds how long one transaction holds the store). */
  static final int DEFAULT_MAX_BATCH = 256;

  /** One caller's run waiting for the commit of the batch that takes it. */
  private static final class Pending {
    final RunRecord record;
    final RunTable.Encoded encoded;
    final Thread caller = Thread.currentThread();
    // Written by the committing thread: failure first, then done (volatile), which publishes it.
    StoreException failure;
    volatile boolean done;

    Pending(RunRecord record, RunTable.Encoded encoded) {
      this.record = record;
      this.encoded = encoded;
    }
  }

  private final StoreDb store;
  private final RunTable runs;
  private final StoreLedger ledger;
  private final LogCheckpoints log;
  private final SigningKey key;
  // Hears each commit (the background checkpointer counts them).
  private final Runnable committed;
  private final ConcurrentLinkedQueue<Pending> pending = new ConcurrentLinkedQueue<>();
  // Set while one caller commits for everyone queued (the leader); the others park.
  private final AtomicBoolean leading = new AtomicBoolean();
  private volatile LongConsumer timer = nanos -> {};
  // Guarded by the store's lock.
  private int maxBatch = DEFAULT_MAX_BATCH;
  private long commits;
  private long committedRuns;

  GroupCommit(
      StoreDb store,
      RunTable runs,
      StoreLedger ledger,
      LogCheckpoints log,
      SigningKey key,
      Runnable committed) {
    this.committed = committed;
    this.store = store;
    this.runs = runs;
    this.ledger = ledger;
    this.log = log;
    this.key = key;
  }

  void onCommit(LongConsumer t) {
    timer = t;
  }

  void maxBatch(int n) {
    if (n < 1) {
      throw new IllegalArgumentException("a batch holds at least one run: " + n);
    }
    synchronized (store.lock()) {
      maxBatch = n;
    }
  }

  RunStore.CommitStats stats() {
    synchronized (store.lock()) {
      return new RunStore.CommitStats(commits, committedRuns);
    }
  }

  /** Stores {@code r}; returns once it is durable. @throws StoreException when it was not */
  void append(RunRecord r) {
    // The records are encoded for the store before the lock is taken, not while every other
    // caller waits on it.
    Pending mine = new Pending(r, RunTable.Encoded.of(r));
    pending.add(mine);
    // One caller at a time leads: it commits what is queued, its own run among it, and wakes each
    // caller whose run that commit decided. The others park until then, off the store's monitor:
    // when they all waited on it, each had to take it in turn only to find its run committed, a
    // convoy of one hand-off per caller after every commit.
    boolean interrupted = false;
    while (!mine.done) {
      if (leading.compareAndSet(false, true)) {
        try {
          synchronized (store.lock()) {
            while (!mine.done) {
              commitBatch();
            }
          }
        } finally {
          leading.set(false);
          // Runs queued meanwhile: the first of their callers leads next (it may find a newer
          // caller leading already, which commits its run too).
          Pending next = pending.peek();
          if (next != null) {
            LockSupport.unpark(next.caller);
          }
        }
      } else {
        // A leader that finishes while this caller is between its check and its park unparks it
        // first, so the park returns at once: no wake-up is lost. An interrupt cannot end the
        // wait (the run is queued and will be decided), so it is kept for after it.
        LockSupport.park(this);
        interrupted |= Thread.interrupted();
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    if (mine.failure != null) {
      throw mine.failure;
    }
  }

  /** Stores several runs in one transaction, all or none (tools that fill a store). */
  void appendAll(List<RunRecord> records) {
    RunRecord last = records.get(records.size() - 1);
    String what = records.size() == 1 ? "run " + last.runId() : records.size() + " runs";
    synchronized (store.lock()) {
      long t0 = System.nanoTime();
      Marks before = marks();
      try {
        for (RunRecord r : records) {
          runs.write(r, RunTable.Encoded.of(r));
        }
        ledger.signHead(key);
        log.checkpointIfDue();
        store.connection().commit();
        committed.run();
      } catch (SQLException | RuntimeException e) {
        store.rollback(e);
        reset(before);
        throw new StoreException(what + ": not stored: " + e.getMessage(), e);
      }
      runs.committed(records);
      timer.accept(System.nanoTime() - t0);
    }
  }

  // Called with the lock held.
  private void commitBatch() {
    List<Pending> batch = new ArrayList<>();
    for (Pending p; batch.size() < maxBatch && (p = pending.poll()) != null; ) {
      batch.add(p);
    }
    if (batch.isEmpty()) {
      return;
    }
    Connection db = store.connection();
    int stored = 0;
    boolean durable = false;
    long t0 = System.nanoTime();
    Marks before = marks();
    try {
      if (batch.size() == 1) {
        // One run alone needs no savepoint: if it fails, the whole transaction is its own.
        runs.write(batch.get(0).record, batch.get(0).encoded);
        stored = 1;
      } else {
        writeEach(db, batch);
        for (Pending p : batch) {
          if (p.failure == null) {
            stored++;
          }
        }
      }
      if (stored > 0) {
        // One signature for the batch: the head covers every run in it through the chain.
        ledger.signHead(key);
      }
      log.checkpointIfDue();
      db.commit();
      durable = true;
      committed.run();
      timer.accept(System.nanoTime() - t0);
      commits++;
      committedRuns += stored;
      List<RunRecord> committed = new ArrayList<>(stored);
      for (Pending p : batch) {
        if (p.failure == null) {
          committed.add(p.record);
        }
      }
      runs.committed(committed);
    } catch (SQLException | RuntimeException e) {
      store.rollback(e);
      reset(before);
      for (Pending p : batch) {
        if (p.failure == null) {
          p.failure = notStored(p.record, e);
        }
      }
    } finally {
      for (Pending p : batch) {
        if (!durable && p.failure == null) {
          // An Error before the commit: the leader's caller sees it thrown, and no other caller
          // may take its run for stored.
          p.failure =
              new StoreException("run " + p.record.runId() + ": not stored: the commit failed");
        }
        p.done = true;
        if (p.caller != Thread.currentThread()) {
          LockSupport.unpark(p.caller);
        }
      }
    }
  }

  /** Writes each run of {@code batch} in its own savepoint, so that one that fails fails alone. */
  private void writeEach(Connection db, List<Pending> batch) throws SQLException {
    for (Pending p : batch) {
      Savepoint sp = db.setSavepoint();
      Marks before = marks();
      try {
        runs.write(p.record, p.encoded);
        db.releaseSavepoint(sp);
      } catch (SQLException | RuntimeException e) {
        // Undo this run only; the rest of the batch goes on.
        store.rollback(sp, e);
        reset(before);
        p.failure = notStored(p.record, e);
      }
    }
  }

  /** Where the node log and the ledger stood before a write, kept beside the rows it undoes. */
  private record Marks(NodeLog.Mark log, StoreLedger.Mark ledger) {}

  private Marks marks() {
    return new Marks(log.mark(), ledger.mark());
  }

  /** Puts the node log and the ledger back where {@code m} found them (their rows rolled back). */
  private void reset(Marks m) {
    log.reset(m.log());
    ledger.reset(m.ledger());
  }

  private static StoreException notStored(RunRecord r, Exception e) {
    return new StoreException("run " + r.runId() + ": not stored: " + e.getMessage(), e);
  }
}
