package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The torn tail of a write-ahead log, read as a crash leaves it: copies of a live database's files
 * taken while transactions are committed or still open stand in for the files of a killed process.
 */
class WalTailTest {
  @TempDir Path dir;

  /** {@code db} in WAL mode with an empty table {@code t}. */
  private static Connection open(Path db) throws Exception {
    Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
    try (Statement st = c.createStatement()) {
      st.execute("PRAGMA journal_mode=WAL");
      st.execute("PRAGMA synchronous=FULL");
      // Never checkpoint by itself, so the copies below see every frame.
      st.execute("PRAGMA wal_autocheckpoint=0");
      st.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)");
    }
    return c;
  }

  /** Inserts a row of {@code t} for each of {@code values}. */
  private static void insert(Connection c, byte[]... values) throws Exception {
    try (PreparedStatement p = c.prepareStatement("INSERT INTO t (v) VALUES (?)")) {
      for (byte[] v : values) {
        p.setBytes(1, v);
        p.executeUpdate();
      }
    }
  }

  /** The files of {@code db} as a SIGKILL at this moment would leave them. */
  private Path crashCopy(Path db, String name) throws Exception {
    Path copy = dir.resolve(name);
    Files.copy(db, copy, StandardCopyOption.REPLACE_EXISTING);
    Path wal = db.resolveSibling(db.getFileName() + "-wal");
    if (Files.exists(wal)) {
      Files.copy(wal, copy.resolveSibling(name + "-wal"), StandardCopyOption.REPLACE_EXISTING);
    }
    return copy;
  }

  private static int rows(Path db) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM t")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  @Test
  void noLogIsAClean() throws Exception {
    assertEquals(WalTail.CLEAN, WalTail.inspect(dir.resolve("absent.db")));
    Path empty = dir.resolve("empty.db");
    Files.createFile(empty.resolveSibling("empty.db-wal"));
    assertEquals(WalTail.CLEAN, WalTail.inspect(empty));
  }

  @Test
  void committedTransactionsAreKeptAndNothingIsDropped() throws Exception {
    Path db = dir.resolve("live.db");
    try (Connection c = open(db)) {
      c.setAutoCommit(false);
      for (int i = 0; i < 5; i++) {
        insert(c, new byte[3000]);
        c.commit();
      }
      Path copy = crashCopy(db, "crashed.db");
      WalTail tail = WalTail.inspect(copy);
      assertTrue(tail.committedFrames() >= 5, tail.toString());
      assertFalse(tail.torn(), tail.toString());
      assertEquals(5, rows(copy));
    }
  }

  @Test
  void anOpenTransactionsSpilledFramesAreTheTornTailRecoveryDrops() throws Exception {
    Path db = dir.resolve("spill.db");
    try (Connection c = open(db)) {
      try (Statement st = c.createStatement()) {
        // A tiny page cache makes a large transaction spill its pages into the log before commit.
        st.execute("PRAGMA cache_size=2");
      }
      c.setAutoCommit(false);
      insert(c, new byte[100]);
      c.commit();
      Random random = new Random(7);
      byte[][] large = new byte[400][4000];
      for (byte[] v : large) {
        random.nextBytes(v);
      }
      insert(c, large);
      Path copy = crashCopy(db, "torn.db");
      WalTail tail = WalTail.inspect(copy);
      assertTrue(tail.committedFrames() >= 1, tail.toString());
      assertTrue(tail.droppedFrames() > 0, tail.toString());
      assertTrue(tail.describe().contains("never acknowledged"), tail.describe());
      // SQLite's own recovery agrees: only the committed row is there.
      assertEquals(1, rows(copy));
      c.rollback();
    }
  }

  @Test
  void aPartlyWrittenFrameIsTorn() throws Exception {
    Path db = dir.resolve("partial.db");
    try (Connection c = open(db)) {
      insert(c, new byte[] {1});
      Path copy = crashCopy(db, "partial-copy.db");
      Path wal = copy.resolveSibling("partial-copy.db-wal");
      WalTail before = WalTail.inspect(copy);
      assertFalse(before.torn(), before.toString());
      // Half a frame header of the live generation: the first 8 bytes of the header's salts.
      byte[] header = Files.readAllBytes(wal);
      byte[] partial = new byte[20];
      System.arraycopy(header, 16, partial, 8, 8);
      Files.write(wal, partial, StandardOpenOption.APPEND);
      WalTail after = WalTail.inspect(copy);
      assertEquals(before.committedFrames(), after.committedFrames());
      assertEquals(20, after.droppedBytes(), after.toString());
      assertEquals(1, rows(copy));
    }
  }

  @Test
  void garbageInPlaceOfALogIsDroppedWhole() throws Exception {
    Path db = dir.resolve("garbage.db");
    byte[] junk = new byte[5000];
    new Random(11).nextBytes(junk);
    Files.write(db.resolveSibling("garbage.db-wal"), junk);
    WalTail tail = WalTail.inspect(db);
    assertEquals(0, tail.committedFrames());
    assertEquals(5000, tail.droppedBytes());
  }
}
