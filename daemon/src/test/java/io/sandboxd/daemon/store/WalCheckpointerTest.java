package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.SigningKey;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WalCheckpointerTest {
  @TempDir Path tmp;

  private final SigningKey key = SigningKey.generate();

  @Test
  void theLogIsFoldedInOffTheCommitPathAndStartsAgainSoItStaysSmall() throws Exception {
    Path file = tmp.resolve("runs.db");
    Path wal = tmp.resolve("runs.db-wal");
    int runs = 320;
    try (RunStore store = RunStore.open(file, key)) {
      // The store's own connection checkpoints only far past what the background thread keeps.
      assertEquals(
          String.valueOf(WalCheckpointer.FOREGROUND_PAGES), store.pragma("wal_autocheckpoint"));
      long firstRunPages = 0;
      for (int i = 0; i < runs; i++) {
        store.append(TestRuns.simple(key, "run-" + i, i));
        if (i == 0) {
          firstRunPages = Files.size(wal) / 4096;
        }
      }
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (store.walCheckpoints() < runs / WalCheckpointer.COMMITS_PER_CHECKPOINT) {
        assertTrue(System.nanoTime() < deadline, "checkpoints: " + store.walCheckpoints());
        Thread.sleep(10);
      }
      store.append(TestRuns.simple(key, "run-last", runs));
      // Each commit appends its pages to the log; without checkpoints 320 commits would leave a
      // log of at least 320 x (pages of one run) pages. Folded in and started again, it holds
      // about one checkpoint's worth of commits.
      long pages = Files.size(wal) / 4096;
      assertTrue(firstRunPages >= 4, "a run wrote " + firstRunPages + " pages");
      assertTrue(
          pages < runs * firstRunPages / 2,
          "log of " + pages + " pages after " + runs + " runs of ~" + firstRunPages);
      assertEquals(runs + 1, store.count());
      assertEquals(List.of(), store.verifyAll());
    }
    // The store's connection closes last and removes the log: a clean close.
    assertFalse(Files.exists(wal));
    try (RunStore again = RunStore.open(file, key)) {
      assertEquals(runs + 1, again.count());
      assertEquals(List.of(), again.verifyAll());
    }
  }

  @Test
  void underSteadyLoadTheLogStaysWithinTheRoomTheDiskReserveKeepsForIt() throws Exception {
    Path file = tmp.resolve("runs.db");
    Path wal = tmp.resolve("runs.db-wal");
    int clients = 8;
    int each = 250;
    AtomicLong largest = new AtomicLong();
    try (RunStore store = RunStore.open(file, key)) {
      // Commits never pause, so the background checkpoint never reaches the log's end: only the
      // store's own bound starts the log again (at 16,384 pages it grew past 30 MB here).
      List<Thread> threads = new ArrayList<>();
      List<Throwable> failed = new CopyOnWriteArrayList<>();
      for (int t = 0; t < clients; t++) {
        int client = t;
        Thread th =
            new Thread(
                () -> {
                  try {
                    for (int i = 0; i < each; i++) {
                      store.append(TestRuns.simple(key, "run-" + client + "-" + i, i));
                      largest.accumulateAndGet(Files.size(wal), Math::max);
                    }
                  } catch (Throwable e) {
                    failed.add(e);
                  }
                });
        th.start();
        threads.add(th);
      }
      for (Thread th : threads) {
        th.join();
      }
      assertEquals(List.of(), failed);
      assertEquals(clients * each, store.count());
    }
    assertTrue(
        largest.get() > WalCheckpointer.FOREGROUND_PAGES * (long) RunStore.PAGE_BYTES / 2,
        "the log never came near its bound: " + largest.get());
    assertTrue(
        largest.get() <= RunStore.LOG_ROOM_BYTES,
        "the log grew to "
            + largest.get()
            + " bytes; the reserve keeps "
            + RunStore.LOG_ROOM_BYTES);
  }
}
