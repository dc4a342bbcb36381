package io.sandboxd.daemon.store;

import io.sandboxd.daemon.ReportPace;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Folds the store's write-ahead log back into its file on a thread and connection of its own.
 * SQLite's automatic checkpoint runs inside the commit that crosses its threshold: a thousand page
 * copies and two fsyncs once every few dozen runs, paid by one caller while the store lock made
 * every other caller wait. A passive checkpoint here copies the same pages while appends go on (a
 * WAL writer and a checkpointer do not block each other); the next commit after a complete one
 * starts the log again from its beginning. The store's own connection keeps a far larger automatic
 * threshold ({@link #FOREGROUND_PAGES}) as a bound should this thread fall behind.
 */
final class WalCheckpointer implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(WalCheckpointer.class.getName());

  /**
   * Commits between checkpoints: about 1,000 pages at a hello run's ~16 of 2 KiB a commit, as
   * SQLite's own default.
   */
  static final long COMMITS_PER_CHECKPOINT = 64;

  /** How long a commit waits at most to be checkpointed when fewer than that follow it. */
  static final long IDLE_MS = 1_000;

  /**
   * The store connection's own automatic checkpoint, in pages (4 MiB of log). Under steady load a
   * passive checkpoint here never finds the log's end (commits keep appending), so the log starts
   * again only once the store's own connection checkpoints what little this thread has not: that
   * bound is the log's size on disk, which the node's disk reserve must hold (at 16,384 pages the
   * log grew to 34 MB under sixteen clients, and past 9 MB at one).
   */
  static final int FOREGROUND_PAGES = 2_048;

  private final ReportPace failures = new ReportPace();
  private final Connection db;
  private final Thread thread;
  private final AtomicLong commits = new AtomicLong();
  private final AtomicLong checkpoints = new AtomicLong();
  private volatile boolean closed;

  private WalCheckpointer(Connection db, String name) {
    this.db = db;
    this.thread = new Thread(this::loop, name);
    thread.setDaemon(true);
  }

  /** Starts checkpointing {@code file} (a store in WAL mode) on its own connection and thread. */
  static WalCheckpointer start(Path file) throws SQLException {
    Connection db = StoreDb.connect(file, false);
    try (Statement st = db.createStatement()) {
      // A checkpoint fsyncs the log before it copies and the file after, as the store's own did.
      st.execute("PRAGMA synchronous=FULL");
      st.execute("PRAGMA busy_timeout=5000");
      // This connection only checkpoints: it never checkpoints on a commit of its own.
      st.execute("PRAGMA wal_autocheckpoint=0");
    } catch (SQLException e) {
      db.close();
      throw e;
    }
    WalCheckpointer c = new WalCheckpointer(db, "sandboxd-wal-checkpoint");
    c.thread.start();
    return c;
  }

  /** Hears one commit of the store; every {@link #COMMITS_PER_CHECKPOINT}th wakes the thread. */
  void committed() {
    if (commits.incrementAndGet() % COMMITS_PER_CHECKPOINT == 0) {
      LockSupport.unpark(thread);
    }
  }

  /** Checkpoints done so far (each copied what the log held when it began). */
  long checkpoints() {
    return checkpoints.get();
  }

  private void loop() {
    while (!closed) {
      LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(IDLE_MS));
      // Also on a quiet second: the store's other transactions (durable runs, pools, JCP) are not
      // counted, and a checkpoint with nothing to copy reads the log's index and syncs nothing.
      if (!closed) {
        checkpoint();
      }
    }
  }

  private void checkpoint() {
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("PRAGMA wal_checkpoint(PASSIVE)")) {
      checkpoints.incrementAndGet();
      if (rs.next() && rs.getInt(1) != 0) {
        // A reader's snapshot held part of the log back: the next checkpoint takes the rest.
        LOG.fine("run store: checkpoint stopped short of the log's end");
      }
    } catch (SQLException e) {
      // Nothing is lost: the frames stay in the log, the next checkpoint (or the store's own
      // automatic one, past its bound) copies them.
      // Paced: on a full disk each try fails, once a second for as long as it lasts.
      failures.log(
          LOG, Level.WARNING, "run store: background checkpoint failed: " + e.getMessage(), e);
    }
  }

  /** Stops the thread and closes its connection (before the store's, which then closes last). */
  @Override
  public void close() {
    closed = true;
    LockSupport.unpark(thread);
    try {
      thread.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (thread.isAlive()) {
      // Still inside a checkpoint after 10 s: its connection is left to it, not closed under it.
      LOG.warning("run store: background checkpoint still running at close; left to finish");
      return;
    }
    try {
      db.close();
    } catch (SQLException e) {
      LOG.log(Level.WARNING, "run store: checkpoint connection close: " + e.getMessage(), e);
    }
  }
}
