package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.SigningKey;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Retention over a backlog larger than one chunk: every due run is pruned, oldest first, never the
 * run just stored, and a later check goes on from where the walk stopped.
 */
class StoreRetentionTest {
  @TempDir Path tmp;

  private static String id(int i) {
    return String.format("run-%05d", i);
  }

  private static void append(RunStore store, int from, int to) {
    for (int i = from; i < to; i++) {
      store.append(TestRuns.simple(KEY, id(i), 1_000 + i));
    }
  }

  private static final SigningKey KEY = SigningKey.generate();

  @Test
  void aBacklogPastMaxBytesIsPrunedInChunksAndTheWalkGoesOn() throws Exception {
    int runs = 2 * StoreRetention.CHUNK_RUNS + 50;
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), KEY)) {
      append(store, 0, runs);
      // Signed records alone pass one byte: every run but the one kept is due.
      RunStore.Retention tiny = new RunStore.Retention(1, 0, 0);
      String keep = id(runs - 1);
      assertEquals(runs - 1, store.prune(tiny, 5_000, keep));
      for (int i = 0; i < runs - 1; i++) {
        assertEquals("store.max_bytes", store.pruned(id(i)).orElseThrow().reason(), id(i));
      }
      assertTrue(store.pruned(keep).isEmpty(), "the run just stored is kept");
      // Later runs: the walk reaches the one kept before and every new one but the newest.
      append(store, runs, runs + 10);
      assertEquals(10, store.prune(tiny, 6_000, id(runs + 9)));
      assertTrue(store.pruned(keep).isPresent());
      assertTrue(store.pruned(id(runs + 9)).isEmpty());
      assertEquals(0, store.prune(tiny, 7_000, id(runs + 9)), "nothing is left to prune");
      assertEquals(List.of(), store.verifyAll());
    }
  }

  @Test
  void maxRunsPrunesEveryRunPastTheNewestAcrossChunks() throws Exception {
    int runs = StoreRetention.CHUNK_RUNS + 40;
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), KEY)) {
      append(store, 0, runs);
      RunStore.Retention ten = new RunStore.Retention(Long.MAX_VALUE, 10, 0);
      assertEquals(runs - 10, store.prune(ten, 5_000, id(runs - 1)));
      for (int i = 0; i < runs; i++) {
        assertEquals(i < runs - 10, store.pruned(id(i)).isPresent(), id(i));
      }
      assertEquals("store.max_runs", store.pruned(id(0)).orElseThrow().reason());
      assertEquals(0, store.prune(ten, 5_000, id(runs - 1)));
    }
  }

  @Test
  void maxAgePrunesEveryRunOlderThanTheBoundAcrossChunks() throws Exception {
    int runs = StoreRetention.CHUNK_RUNS + 40;
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), KEY)) {
      append(store, 0, runs);
      // Runs are stored at 1000 + i ms: older than 1 s at now = 1000 + runs + 1000 - 30 are due.
      long now = 1_000L + runs + 1_000 - 30;
      RunStore.Retention second = new RunStore.Retention(Long.MAX_VALUE, 0, 1_000);
      assertEquals(runs - 30, store.prune(second, now, id(runs - 1)));
      assertTrue(store.pruned(id(runs - 31)).isPresent());
      assertTrue(store.pruned(id(runs - 30)).isEmpty());
      assertEquals("store.max_age_ms", store.pruned(id(0)).orElseThrow().reason());
    }
  }
}
