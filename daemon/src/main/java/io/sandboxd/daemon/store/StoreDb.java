package io.sandboxd.daemon.store;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.sqlite.SQLiteConfig;

/**
 * The store's one SQLite connection and the monitor that every table holds while it uses it: one
 * writer keeps each transaction's snapshot its own (a second writing connection would meet
 * SQLITE_BUSY_SNAPSHOT), and every failure becomes a {@link StoreException} here, once.
 */
final class StoreDb {
  /** Work on the connection inside one transaction. */
  @FunctionalInterface
  interface Work<T> {
    T apply(Connection db) throws SQLException;
  }

  /** Reads the result row a query's cursor stands on. */
  @FunctionalInterface
  interface Row<T> {
    T read(ResultSet rs) throws SQLException;
  }

  private final Connection db;
  private final Object lock;
  // The hot path's statements, prepared once: parsing the same INSERT for every run cost more than
  // executing it. Guarded by lock.
  private final Statements prepared;

  /**
   * A connection to the store file {@code file}, read-only or not. The driver's generated keys are
   * off: with them on, every INSERT matched its SQL against a pattern and then prepared and ran
   * {@code SELECT last_insert_rowid()}, a second statement for each of a run's dozen inserts, whose
   * result no code here reads.
   */
  static Connection connect(Path file, boolean readOnly) throws SQLException {
    SQLiteConfig c = new SQLiteConfig();
    c.setGetGeneratedKeys(false);
    if (readOnly) {
      c.setReadOnly(true);
      c.setBusyTimeout(5000);
    }
    return DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath(), c.toProperties());
  }

  /** {@code lock} is the monitor every user of {@code db} synchronizes on (the store itself). */
  StoreDb(Connection db, Object lock) {
    this.db = db;
    this.lock = lock;
    this.prepared = new Statements(db);
  }

  /** The connection, for work that already holds {@link #lock()}. */
  Connection connection() {
    return db;
  }

  /**
   * {@code sql} prepared once on the connection and kept: for statements run on every append. The
   * caller holds {@link #lock()}, sets every parameter, and does not close it.
   */
  PreparedStatement prepared(String sql) throws SQLException {
    return prepared.of(sql);
  }

  /** The statements kept on the connection, for tables that prepare their own (lock held). */
  Statements statements() {
    return prepared;
  }

  /** The monitor every user of the connection holds. */
  Object lock() {
    return lock;
  }

  /**
   * Runs {@code work} in one transaction under the lock and commits it (fsynced before it returns),
   * or rolls it back and throws naming {@code what}. A {@link StoreException} from the work (a
   * tampered run, say) is thrown as it is.
   */
  <T> T transact(String what, Work<T> work) {
    return transact(what, () -> {}, work);
  }

  /**
   * As {@link #transact(String, Work)}; {@code undo} resets state kept beside the rolled-back rows.
   */
  <T> T transact(String what, Runnable undo, Work<T> work) {
    synchronized (lock) {
      try {
        T out = work.apply(db);
        db.commit();
        return out;
      } catch (SQLException | RuntimeException e) {
        rollback(e);
        undo.run();
        if (e instanceof StoreException se) {
          throw se;
        }
        if (e instanceof LogInputException || e instanceof LogNotFoundException) {
          throw (RuntimeException) e;
        }
        throw new StoreException(what + ": " + e.getMessage(), e);
      }
    }
  }

  /** {@link #first} of {@code sql}, read in one transaction ({@link #transact(String, Work)}). */
  <T> Optional<T> firstRow(String what, String sql, Row<T> row, Object... params) {
    return transact(what, db -> first(db, sql, row, params));
  }

  /**
   * Rolls back the open transaction and returns the failure {@code e} as a store error naming
   * {@code what}; a failure to roll back is added to {@code e}.
   */
  StoreException rolledBack(String what, Exception e) {
    rollback(e);
    return new StoreException(what + ": " + e.getMessage(), e);
  }

  /**
   * Runs the read {@code work} under the lock and ends its transaction; a failed query becomes a
   * store error naming {@code what}.
   */
  <T> T read(String what, Work<T> work) {
    return committed(what, work);
  }

  /**
   * Runs the write {@code work} under the lock and commits it (fsynced before it returns); a failed
   * statement rolls it back and becomes a store error naming {@code what}.
   */
  <T> T write(String what, Work<T> work) {
    return committed(what, work);
  }

  /**
   * As {@link #write}, for a change that may find nothing to change: committed when {@code work}
   * returns true, rolled back when it returns false.
   */
  boolean change(String what, Work<Boolean> work) {
    synchronized (lock) {
      try {
        if (!work.apply(db)) {
          db.rollback();
          return false;
        }
        db.commit();
        return true;
      } catch (SQLException e) {
        throw rolledBack(what, e);
      }
    }
  }

  /**
   * Runs {@code work} under the lock and commits; a failed statement rolls back and becomes a store
   * error naming {@code what}.
   */
  private <T> T committed(String what, Work<T> work) {
    synchronized (lock) {
      try {
        T out = work.apply(db);
        db.commit();
        return out;
      } catch (SQLException e) {
        throw rolledBack(what, e);
      }
    }
  }

  /**
   * Rolls back the open transaction and begins the next, after {@code cause} failed it; a failure
   * to do so is added to {@code cause}.
   */
  void rollback(Exception cause) {
    try {
      db.rollback();
    } catch (SQLException notRolledBack) {
      cause.addSuppressed(notRolledBack);
      // SQLite ends a transaction itself when a statement or the commit fails for want of room or
      // by an I/O error, and the driver's rollback then fails before it begins the next one: every
      // later statement would run in a transaction of its own, committed as it ran, and the next
      // commit would fail for want of a transaction. So the next is begun here.
      try (Statement st = db.createStatement()) {
        st.execute("BEGIN");
      } catch (SQLException stillOpen) {
        cause.addSuppressed(stillOpen);
      }
    }
    forgetStatementsAfter(cause);
  }

  /**
   * Undoes the work since {@code sp} and ends it, the transaction going on, after {@code cause}
   * failed it.
   */
  void rollback(Savepoint sp, Exception cause) throws SQLException {
    forgetStatementsAfter(cause);
    try {
      db.rollback(sp);
      db.releaseSavepoint(sp);
    } catch (SQLException gone) {
      // SQLite ended the whole transaction (as it does for want of room): the transaction fails,
      // and with the reason that ended it, not the savepoint it took along.
      cause.addSuppressed(gone);
      throw new SQLException(cause.getMessage(), cause);
    }
  }

  /**
   * After a failure that a statement of the connection raised, the statements kept are prepared
   * anew at their next use (see {@link Statements#discard}): without it, one full disk left every
   * later run unstorable until a restart. Failures of the work's own checks keep them.
   */
  private void forgetStatementsAfter(Throwable cause) {
    for (Throwable t = cause; t != null; t = t.getCause()) {
      if (t instanceof SQLException) {
        prepared.discard();
        return;
      }
    }
  }

  /**
   * Runs the INSERT, UPDATE or DELETE {@code sql} with {@code params} bound in order (String, Long,
   * Integer, byte[] or null); returns how many rows it changed.
   */
  static int update(Connection db, String sql, Object... params) throws SQLException {
    try (PreparedStatement st = db.prepareStatement(sql)) {
      bind(st, params);
      return st.executeUpdate();
    }
  }

  /**
   * The first row {@code sql} selects with {@code params} bound, read by {@code row}; a row read as
   * null (a NULL column only a hand-altered schema holds) reads as no row, not as a crash.
   */
  static <T> Optional<T> first(Connection db, String sql, Row<T> row, Object... params)
      throws SQLException {
    try (PreparedStatement st = db.prepareStatement(sql)) {
      bind(st, params);
      try (ResultSet rs = st.executeQuery()) {
        return rs.next() ? Optional.ofNullable(row.read(rs)) : Optional.empty();
      }
    }
  }

  /**
   * Every row {@code sql} selects with {@code params} bound, each read by {@code row}, in order.
   */
  static <T> List<T> all(Connection db, String sql, Row<T> row, Object... params)
      throws SQLException {
    List<T> out = new ArrayList<>();
    try (PreparedStatement st = db.prepareStatement(sql)) {
      bind(st, params);
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          out.add(row.read(rs));
        }
      }
    }
    return out;
  }

  static void bind(PreparedStatement st, Object... params) throws SQLException {
    for (int i = 0; i < params.length; i++) {
      Object p = params[i];
      if (p == null) {
        st.setNull(i + 1, Types.NULL);
      } else if (p instanceof String s) {
        st.setString(i + 1, s);
      } else if (p instanceof Long n) {
        st.setLong(i + 1, n);
      } else if (p instanceof Integer n) {
        st.setInt(i + 1, n);
      } else if (p instanceof byte[] b) {
        st.setBytes(i + 1, b);
      } else {
        // A programming error, never data: the store binds only the types its schema holds.
        throw new IllegalArgumentException(
            "parameter " + (i + 1) + " is a " + p.getClass().getSimpleName() + ", not bindable");
      }
    }
  }
}
