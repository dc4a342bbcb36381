package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.store.DurableRunTable.State;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store that runs out of room (SQLite's SQLITE_FULL, as on a full disk): the runs it cannot keep
 * are refused as not stored, and it stores runs again, with an intact ledger, as soon as it has
 * room, without a restart.
 */
class StoreFullTest {
  @TempDir Path tmp;

  private final SigningKey key = SigningKey.generate();

  private static final long ROOM = 1L << 30;

  @Test
  void aFullStoreRefusesRunsAndStoresThemAgainOnceItHasRoom() {
    Path db = tmp.resolve("runs.db");
    List<String> stored = new ArrayList<>();
    try (RunStore store = RunStore.open(db, key)) {
      for (int i = 0; i < 20; i++) {
        store.append(TestRuns.simple(key, "before-" + i, i));
        stored.add("before-" + i);
      }
      store.maxPages(1); // the cap becomes the store's size: the next page cannot be had
      StoreException refused = null;
      for (int i = 0; i < 200 && refused == null; i++) {
        String id = "full-" + i;
        try {
          store.append(TestRuns.simple(key, id, 100 + i));
          stored.add(id);
        } catch (StoreException e) {
          refused = e;
          assertFalse(store.run(id).isPresent(), id + " was refused but is there");
        }
      }
      assertTrue(refused != null, "a store at its cap stored 200 more runs");
      assertTrue(refused.getMessage().contains("not stored"), refused.getMessage());
      assertTrue(refused.getMessage().contains("SQLITE_FULL"), refused.getMessage());
      // Still full: refused again, for the same reason (not a statement the failure broke).
      StoreException again =
          assertThrows(
              StoreException.class, () -> store.append(TestRuns.simple(key, "still-full", 400)));
      assertTrue(again.getMessage().contains("SQLITE_FULL"), again.getMessage());

      store.maxPages(ROOM);
      for (int i = 0; i < 20; i++) {
        store.append(TestRuns.simple(key, "after-" + i, 500 + i));
        stored.add("after-" + i);
      }
      assertEquals(stored.size(), store.count());
      for (String id : stored) {
        assertTrue(store.run(id).isPresent(), id);
      }
      assertEquals(List.of(), store.verifyAll());
    }
    try (RunStore reopened = RunStore.open(db, key)) {
      assertEquals(stored.size(), reopened.count());
      assertEquals(List.of(), reopened.verifyAll());
    }
  }

  @Test
  void aDurableRunRefusedForRoomLeavesRunsAndDurableRunsStorableAfter() {
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), key)) {
      store.append(TestRuns.simple(key, "run-0", 0));
      store.maxPages(1);
      StoreException e = assertThrows(StoreException.class, () -> storeDurable(store, "d-full"));
      assertTrue(e.getMessage().contains("SQLITE_FULL"), e.getMessage());
      assertFalse(store.durable().holds("d-full"));

      store.maxPages(ROOM);
      assertTrue(storeDurable(store, "d-room"));
      store.append(TestRuns.simple(key, "run-1", 1));
      assertTrue(store.durable().holds("d-room"));
      assertEquals(1, store.durable().segments("d-room").size());
      assertEquals(2, store.count());
      assertEquals(List.of(), store.verifyAll());
    }
  }

  /**
   * Stores durable run {@code id}: its first segment, receipt and attestation (real signed records)
   * and a 64 KiB module of random bytes, which no page the store has free can hold.
   */
  private boolean storeDurable(RunStore store, String id) {
    RunRecord r = TestRuns.simple(key, id, 9);
    byte[] module = new byte[64 * 1024];
    new Random(7).nextBytes(module);
    return store
        .durable()
        .insert(
            new DurableRunTable.Run(
                id, State.parked, 1, 1, r.unit(), "{}", r.grantsId(), "step", "", "", false, false),
            module,
            List.of(new DurableRunTable.Segment(r.segment(), "")),
            List.of(r.receipt(), r.attestation()));
  }

  @Test
  void callersAppendingWhileTheStoreFillsAndEmptiesKeepEveryRunTheyWereToldWasStored()
      throws Exception {
    for (long seed : new long[] {20261206L, 7L, 1234567L}) {
      appendWhileRoomComesAndGoes(seed);
    }
  }

  /**
   * Eight threads append runs while another caps the store and lifts the cap at seeded moments:
   * every run whose append returned is kept and verifies, every refused one is absent, and the
   * store goes on storing after the last cap is lifted.
   */
  private void appendWhileRoomComesAndGoes(long seed) throws Exception {
    Path db = tmp.resolve("runs-" + seed + ".db");
    Random random = new Random(seed);
    List<String> stored = Collections.synchronizedList(new ArrayList<>());
    ConcurrentHashMap<String, String> refused = new ConcurrentHashMap<>();
    List<String> problems = Collections.synchronizedList(new ArrayList<>());
    try (RunStore store = RunStore.open(db, key)) {
      List<Thread> callers = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        int thread = t;
        Thread caller =
            new Thread(
                () -> {
                  for (int i = 0; i < 40; i++) {
                    String id = "run-" + seed + "-" + thread + "-" + i;
                    try {
                      store.append(TestRuns.simple(key, id, i));
                      stored.add(id);
                    } catch (StoreException e) {
                      refused.put(id, e.getMessage());
                    } catch (RuntimeException e) {
                      problems.add(id + ": " + e);
                    }
                  }
                });
        caller.start();
        callers.add(caller);
      }
      int caps = 0;
      while (callers.stream().anyMatch(Thread::isAlive)) {
        store.maxPages(random.nextBoolean() ? 1 : ROOM);
        caps++;
        Thread.sleep(random.nextInt(8));
      }
      for (Thread t : callers) {
        t.join(120_000);
        assertFalse(t.isAlive(), "seed " + seed + ": a caller still waits");
      }
      store.maxPages(ROOM);
      store.append(TestRuns.simple(key, "run-" + seed + "-last", 1));
      stored.add("run-" + seed + "-last");

      assertEquals(List.of(), problems, "seed " + seed);
      assertTrue(caps > 1, "seed " + seed);
      assertFalse(refused.isEmpty(), "seed " + seed + ": no run met a full store");
      for (var e : refused.entrySet()) {
        assertTrue(e.getValue().contains("SQLITE_FULL"), "seed " + seed + ": " + e.getValue());
        assertFalse(store.run(e.getKey()).isPresent(), "seed " + seed + ": " + e.getKey());
      }
      for (String id : stored) {
        assertTrue(store.run(id).isPresent(), "seed " + seed + ": " + id + " was acknowledged");
      }
      assertEquals(stored.size(), store.count(), "seed " + seed);
      assertEquals(List.of(), store.verifyAll(), "seed " + seed);
    }
    try (RunStore reopened = RunStore.open(db, key)) {
      assertEquals(stored.size(), reopened.count(), "seed " + seed);
      assertEquals(List.of(), reopened.verifyAll(), "seed " + seed);
    }
  }
}
