package io.sandboxd.daemon.store;

import io.sandboxd.attest.PublicKey;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Checks runs' records (signatures, evidence, journal) on several threads, each with a read-only
 * connection of its own, and answers in the order the runs were given: start-up checks the runs
 * after the sealed checkpoint with it, on as many threads as there are cores. Every connection must
 * see the same store; start-up has it to itself (nothing appends before it serves).
 */
final class ParallelRunCheck implements AutoCloseable {
  /** Runs handed over at once: enough to keep every thread busy, few enough to hold in memory. */
  static final int BATCH = 256;

  /** Opens one read-only connection to the store. */
  @FunctionalInterface
  interface Readers {
    Connection open() throws SQLException;
  }

  private final PublicKey signer;
  private final List<Connection> readers = new ArrayList<>();
  // One per reader, kept across batches: each run's queries are prepared once per thread.
  private final List<Statements> statements = new ArrayList<>();
  private final ExecutorService pool;
  private final Set<String> threadsUsed = ConcurrentHashMap.newKeySet();

  /**
   * {@code threads} workers (at least 2: one thread is the plain audit), each on its own reader.
   */
  ParallelRunCheck(PublicKey signer, int threads, Readers open) throws SQLException {
    if (threads < 2) {
      throw new IllegalArgumentException("threads: " + threads + " (a parallel check needs 2)");
    }
    this.signer = signer;
    try {
      for (int i = 0; i < threads; i++) {
        readers.add(open.open());
        statements.add(new Statements(readers.get(i)));
      }
    } catch (SQLException | RuntimeException e) {
      closeReaders();
      throw e;
    }
    AtomicInteger n = new AtomicInteger();
    this.pool =
        Executors.newFixedThreadPool(
            threads,
            r -> {
              Thread t = new Thread(r, "sandboxd-store-check-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
  }

  /** One verdict per run, in the order of {@code runs}; the first failure to read is thrown. */
  List<Optional<StoreDamage>> check(List<StoreAudit.LedgerRun> runs) throws SQLException {
    @SuppressWarnings("unchecked")
    Optional<StoreDamage>[] found = new Optional[runs.size()];
    AtomicInteger next = new AtomicInteger();
    List<Future<Void>> workers = new ArrayList<>();
    for (Statements reader : statements.subList(0, Math.min(statements.size(), runs.size()))) {
      workers.add(
          pool.submit(
              () -> {
                // Each takes the next run still unchecked: runs differ in cost (journals, records).
                for (int i = next.getAndIncrement(); i < found.length; i = next.getAndIncrement()) {
                  found[i] =
                      StoreAudit.checkRun(reader, signer, runs.get(i), StoreAudit.Depth.FULL);
                  threadsUsed.add(Thread.currentThread().getName());
                }
                return null;
              }));
    }
    Throwable failure = null;
    for (Future<Void> w : workers) {
      try {
        w.get();
      } catch (ExecutionException e) {
        failure = failure == null ? e.getCause() : failure;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new StoreException("run store: check interrupted", e);
      }
    }
    if (failure instanceof SQLException se) {
      throw se;
    }
    if (failure instanceof RuntimeException re) {
      throw re;
    }
    if (failure instanceof Error err) {
      throw err;
    }
    if (failure != null) {
      throw new StoreException("run store: cannot check a run: " + failure, failure);
    }
    return Arrays.asList(found);
  }

  /** How many of its threads have checked at least one run. */
  int threadsUsed() {
    return threadsUsed.size();
  }

  @Override
  public void close() {
    pool.shutdownNow();
    closeReaders();
  }

  private void closeReaders() {
    statements.forEach(Statements::close);
    statements.clear();
    for (Connection c : readers) {
      try {
        c.rollback();
        c.close();
      } catch (SQLException e) {
        // Read-only: nothing to lose; the store's own connection reports real failures.
      }
    }
    readers.clear();
  }
}
