package io.sandboxd.executor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;

/**
 * The node's key-value store behind `kv_get`/`kv_put`: SQLite (WAL, synchronous=FULL), shared by
 * every run on this node; the grant's prefixes scope what each run may touch.
 */
public final class KvStore implements AutoCloseable {
  /** Largest value a unit may store (one kv_put). */
  public static final int MAX_VALUE_BYTES = 1 << 20;

  /** Largest key a unit may use. */
  public static final int MAX_KEY_BYTES = 4096;

  private final Connection db;

  private KvStore(Connection db) {
    this.db = db;
  }

  public static KvStore open(Path file) {
    try {
      Files.createDirectories(file.toAbsolutePath().getParent());
      Connection db = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
      try (Statement st = db.createStatement()) {
        st.execute("PRAGMA journal_mode=WAL");
        st.execute("PRAGMA synchronous=FULL");
        st.execute("CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB NOT NULL)");
      }
      return new KvStore(db);
    } catch (SQLException | IOException e) {
      throw new IllegalStateException("kv store " + file + ": cannot open: " + e.getMessage(), e);
    }
  }

  public synchronized Optional<byte[]> get(byte[] key) throws SQLException {
    try (PreparedStatement st = db.prepareStatement("SELECT value FROM kv WHERE key = ?")) {
      st.setBytes(1, key);
      try (ResultSet rs = st.executeQuery()) {
        return rs.next() ? Optional.of(rs.getBytes(1)) : Optional.empty();
      }
    }
  }

  public synchronized void put(byte[] key, byte[] value) throws SQLException {
    try (PreparedStatement st =
        db.prepareStatement("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)")) {
      st.setBytes(1, key);
      st.setBytes(2, value);
      st.executeUpdate();
    }
  }

  @Override
  public synchronized void close() throws SQLException {
    db.close();
  }
}
