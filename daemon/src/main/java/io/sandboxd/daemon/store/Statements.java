package io.sandboxd.daemon.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The statements of one connection, each prepared once and kept until {@link #close}: for the
 * queries a pass runs for every run (parsing the same SELECT anew for each run cost as much as
 * running it). Used by one thread at a time, as its connection is.
 */
final class Statements implements AutoCloseable {
  private final Connection db;
  private final Map<String, PreparedStatement> prepared = new HashMap<>();

  Statements(Connection db) {
    this.db = db;
  }

  /**
   * {@code sql}, prepared on the first call and the same statement after: the caller sets every
   * parameter, closes the result sets it opens, and never closes the statement.
   */
  PreparedStatement of(String sql) throws SQLException {
    PreparedStatement st = prepared.get(sql);
    if (st == null) {
      st = db.prepareStatement(sql);
      prepared.put(sql, st);
    }
    return st;
  }

  /** As {@link StoreDb#first}, with {@code sql} prepared once. */
  <T> Optional<T> first(String sql, StoreDb.Row<T> row, Object... params) throws SQLException {
    PreparedStatement st = of(sql);
    StoreDb.bind(st, params);
    try (ResultSet rs = st.executeQuery()) {
      return rs.next() ? Optional.ofNullable(row.read(rs)) : Optional.empty();
    }
  }

  /**
   * Closes every statement kept (not the connection); each is prepared anew at its next use. Called
   * after any statement of the connection failed: the driver finalizes a statement whose step fails
   * with an I/O error (a full disk, say) without marking it closed, so every later use of it would
   * fail for good ("statement is not executing"), long after the disk has room again.
   */
  void discard() {
    for (PreparedStatement st : prepared.values()) {
      try {
        st.close();
      } catch (SQLException e) {
        // A statement that cannot be finalized holds nothing the connection's close does not end.
      }
    }
    prepared.clear();
  }

  /** Closes every statement kept (not the connection). */
  @Override
  public void close() {
    discard();
  }
}
