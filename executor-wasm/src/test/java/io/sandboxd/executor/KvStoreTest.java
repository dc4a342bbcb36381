package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.sql.SQLException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The kv store when its database cannot grow: the failure says why, and nothing is half-kept. */
class KvStoreTest {
  @TempDir Path dir;

  @Test
  void aPutTheDatabaseHasNoRoomForSaysSoAndTheStoreWorksOnceThereIsRoom() throws Exception {
    try (KvStore kv = KvStore.open(dir.resolve("kv.db"))) {
      byte[] small = "small".getBytes(java.nio.charset.StandardCharsets.UTF_8);
      kv.put("a".getBytes(), small, "unit-a", Long.MAX_VALUE);
      long usage = kv.usage("unit-a");
      // The cap cannot go below the file's size: this caps it at what it holds now.
      kv.maxPages(1);
      byte[] big = new byte[KvStore.MAX_VALUE_BYTES];
      Arrays.fill(big, (byte) 7);
      SQLException full =
          assertThrows(
              SQLException.class, () -> kv.put("b".getBytes(), big, "unit-a", Long.MAX_VALUE));
      assertTrue(String.valueOf(full.getMessage()).contains("SQLITE_FULL"), full.toString());
      // Nothing of the refused put is kept: neither the entry nor its cost.
      assertEquals(usage, kv.usage("unit-a"));
      assertTrue(kv.get("b".getBytes()).isEmpty());
      // The connection is still in autocommit mode and usable.
      kv.put("c".getBytes(), small, "unit-a", Long.MAX_VALUE);
      assertArrayEquals(small, kv.get("c".getBytes()).orElseThrow());

      kv.maxPages(1 << 30);
      assertEquals(KvStore.Put.STORED, kv.put("b".getBytes(), big, "unit-a", Long.MAX_VALUE));
      assertArrayEquals(big, kv.get("b".getBytes()).orElseThrow());
    }
  }
}
