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
import java.util.function.LongPredicate;

/**
 * The node's key-value store behind `kv_get`/`kv_put`: SQLite (WAL, synchronous=FULL), shared by
 * every run on this node; the grant's prefixes scope what each run may touch. Each entry is owned
 * by the module that last wrote it, and a module's entries are bounded by a node quota.
 */
public final class KvStore implements AutoCloseable {
  /** Largest value a unit may store (one kv_put). */
  public static final int MAX_VALUE_BYTES = 1 << 20;

  /** Largest key a unit may use. */
  public static final int MAX_KEY_BYTES = 4096;

  /** What an entry costs besides its key and value bytes: bounds the number of entries too. */
  public static final long ENTRY_BYTES = 64;

  /** The answer of a quota-bounded put. */
  public enum Put {
    STORED,
    /** Past the owner's quota, or into the room the node keeps on its disk. */
    OVER_QUOTA
  }

  private final Connection db;
  // Whether the disk holding the store has room for this many more bytes of a unit's.
  private final LongPredicate roomFor;

  private KvStore(Connection db, LongPredicate roomFor) {
    this.db = db;
    this.roomFor = roomFor;
  }

  /** The store in {@code file}, with no disk reserve (tests, tools). */
  public static KvStore open(Path file) {
    return open(file, DiskReserve.NONE);
  }

  /** The store in {@code file}; units' puts never take {@code disk}'s reserve. */
  public static KvStore open(Path file, DiskReserve disk) {
    try {
      Files.createDirectories(file.toAbsolutePath().getParent());
      // No generated keys: the driver would run SELECT last_insert_rowid() after every INSERT.
      org.sqlite.SQLiteConfig config = new org.sqlite.SQLiteConfig();
      config.setGetGeneratedKeys(false);
      Connection db =
          DriverManager.getConnection(
              "jdbc:sqlite:" + file.toAbsolutePath(), config.toProperties());
      try (Statement st = db.createStatement()) {
        st.execute("PRAGMA journal_mode=WAL");
        st.execute("PRAGMA synchronous=FULL");
        st.execute("CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB NOT NULL)");
        boolean owned = false;
        try (ResultSet cols = st.executeQuery("PRAGMA table_info(kv)")) {
          while (cols.next()) {
            owned |= "owner".equals(cols.getString("name"));
          }
        }
        if (!owned) {
          // Entries written before quotas have no owner and count against no module.
          st.execute("ALTER TABLE kv ADD COLUMN owner TEXT");
        }
        st.execute(
            "CREATE TABLE IF NOT EXISTS kv_usage (owner TEXT PRIMARY KEY, bytes INTEGER NOT NULL)");
      }
      Path dir = file.toAbsolutePath().getParent();
      return new KvStore(db, bytes -> disk.admits("kv", dir, bytes));
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

  /** Stores {@code value} under {@code key} with no owner and no quota (operator tools, tests). */
  public synchronized void put(byte[] key, byte[] value) throws SQLException {
    put(key, value, null, Long.MAX_VALUE);
  }

  /**
   * Stores {@code value} under {@code key} for {@code owner}, unless that would take the owner's
   * entries (keys, values and {@link #ENTRY_BYTES} each) past {@code quota}, or the disk's reserve
   * (both answered {@link Put#OVER_QUOTA}). The check, the write and the usage count change in one
   * transaction.
   */
  public synchronized Put put(byte[] key, byte[] value, String owner, long quota)
      throws SQLException {
    db.setAutoCommit(false);
    try {
      Put answer = putInTransaction(key, value, owner, quota);
      if (answer == Put.STORED) {
        db.commit();
      } else {
        db.rollback();
      }
      db.setAutoCommit(true);
      return answer;
    } catch (SQLException | RuntimeException e) {
      endFailed(e);
      throw e;
    }
  }

  private Put putInTransaction(byte[] key, byte[] value, String owner, long quota)
      throws SQLException {
    String oldOwner = null;
    long oldCost = 0;
    boolean present = false;
    try (PreparedStatement st =
        db.prepareStatement("SELECT owner, length(key) + length(value) FROM kv WHERE key = ?")) {
      st.setBytes(1, key);
      try (ResultSet rs = st.executeQuery()) {
        if (rs.next()) {
          present = true;
          oldOwner = rs.getString(1);
          oldCost = rs.getLong(2) + ENTRY_BYTES;
        }
      }
    }
    long newCost = (long) key.length + value.length + ENTRY_BYTES;
    if (owner != null) {
      long used = usage(owner) - (present && owner.equals(oldOwner) ? oldCost : 0);
      // Twice the entry: SQLite writes it to its log first, then to the database.
      if (newCost > quota - used || !roomFor.test(2 * newCost)) {
        return Put.OVER_QUOTA;
      }
    }
    if (present && oldOwner != null) {
      addUsage(oldOwner, -oldCost);
    }
    if (owner != null) {
      addUsage(owner, newCost);
    }
    try (PreparedStatement st =
        db.prepareStatement("INSERT OR REPLACE INTO kv (key, value, owner) VALUES (?, ?, ?)")) {
      st.setBytes(1, key);
      st.setBytes(2, value);
      st.setString(3, owner);
      st.executeUpdate();
    }
    return Put.STORED;
  }

  /**
   * Ends the transaction {@code cause} failed and returns to autocommit. SQLite ends it itself when
   * the disk is full or fails, and the driver's rollback and commit then fail for want of a
   * transaction: those failures are added to {@code cause}, which stays the one thrown, so the
   * reason (SQLITE_FULL, an I/O error) is what the caller sees.
   */
  private void endFailed(Exception cause) {
    try {
      db.rollback();
    } catch (SQLException notRolledBack) {
      cause.addSuppressed(notRolledBack);
    }
    try {
      db.setAutoCommit(true);
    } catch (SQLException notEnded) {
      cause.addSuppressed(notEnded);
    }
  }

  /** The kv bytes {@code owner}'s entries cost now. */
  public synchronized long usage(String owner) throws SQLException {
    try (PreparedStatement st = db.prepareStatement("SELECT bytes FROM kv_usage WHERE owner = ?")) {
      st.setString(1, owner);
      try (ResultSet rs = st.executeQuery()) {
        return rs.next() ? rs.getLong(1) : 0;
      }
    }
  }

  private void addUsage(String owner, long delta) throws SQLException {
    try (PreparedStatement st =
        db.prepareStatement(
            "INSERT INTO kv_usage (owner, bytes) VALUES (?, max(0, ?)) ON CONFLICT(owner)"
                + " DO UPDATE SET bytes = max(0, bytes + ?)")) {
      st.setString(1, owner);
      st.setLong(2, delta);
      st.setLong(3, delta);
      st.executeUpdate();
    }
  }

  /**
   * Caps the database at {@code pages} pages, as a full disk would, and returns the cap in force;
   * for tests of a store that runs out of room.
   */
  synchronized long maxPages(long pages) throws SQLException {
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("PRAGMA max_page_count=" + pages)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Override
  public synchronized void close() throws SQLException {
    db.close();
  }
}
