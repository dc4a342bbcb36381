package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StatementsTest {
  @TempDir Path tmp;

  @Test
  void eachQueryIsPreparedOnceAndClosedWithTheSetNotTheConnection() throws Exception {
    try (Connection db = StoreDb.connect(tmp.resolve("s.db"), false)) {
      try (Statement st = db.createStatement()) {
        st.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
        st.execute("INSERT INTO t VALUES ('a', 1), ('b', 2)");
      }
      PreparedStatement first;
      try (Statements q = new Statements(db)) {
        String byKey = "SELECT v FROM t WHERE k = ?";
        first = q.of(byKey);
        assertSame(first, q.of(byKey));
        assertNotSame(first, q.of("SELECT COUNT(*) FROM t"));
        // The kept statement answers each binding anew, and a missing row reads as none.
        assertEquals(Optional.of(1L), q.first(byKey, rs -> rs.getLong(1), "a"));
        assertEquals(Optional.of(2L), q.first(byKey, rs -> rs.getLong(1), "b"));
        assertEquals(Optional.empty(), q.first(byKey, rs -> rs.getLong(1), "c"));
        assertSame(first, q.of(byKey));
      }
      assertTrue(first.isClosed());
      assertFalse(db.isClosed());
    }
  }
}
