package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.SigningKey;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Group commit: concurrent appends share a commit; each caller returns once its run is durable. */
class GroupCommitTest {
  @TempDir Path tmp;

  private final SigningKey key = SigningKey.generate();

  private Path db() {
    return tmp.resolve("runs.db");
  }

  /** Whether {@code runId} is committed, as a second connection (another process) sees it. */
  private boolean committed(String runId) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db());
        PreparedStatement st =
            c.prepareStatement(
                "SELECT (SELECT COUNT(*) FROM runs WHERE run_id = ?1)"
                    + " + (SELECT COUNT(*) FROM ledger WHERE run_id = ?1)")) {
      st.setString(1, runId);
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getInt(1) == 2;
      }
    }
  }

  /** The ledger positions in order: 0..n-1 without gaps when every run was signed in turn. */
  private List<Long> positions() throws Exception {
    List<Long> out = new ArrayList<>();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db());
        PreparedStatement st = c.prepareStatement("SELECT position FROM ledger ORDER BY position");
        ResultSet rs = st.executeQuery()) {
      while (rs.next()) {
        out.add(rs.getLong(1));
      }
    }
    return out;
  }

  /**
   * Starts one thread per record appending it while the test holds the store's monitor, waits until
   * every thread has queued its run and blocks or parks, then lets them go: the one leading commits
   * everything queued. Returns each thread's failure (null when stored) and asserts that every
   * caller saw its own run committed the moment append returned.
   */
  private List<Throwable> appendTogether(RunStore store, List<RunRecord> records) throws Exception {
    List<Throwable> failures = new ArrayList<>();
    ConcurrentLinkedQueue<String> notYetCommitted = new ConcurrentLinkedQueue<>();
    List<Thread> threads = new ArrayList<>();
    Throwable[] outcome = new Throwable[records.size()];
    CountDownLatch finished = new CountDownLatch(records.size());
    synchronized (store) {
      for (int i = 0; i < records.size(); i++) {
        int n = i;
        Thread t =
            new Thread(
                () -> {
                  try {
                    store.append(records.get(n));
                    if (!committed(records.get(n).runId())) {
                      notYetCommitted.add(records.get(n).runId());
                    }
                  } catch (Throwable e) {
                    outcome[n] = e;
                  } finally {
                    finished.countDown();
                  }
                });
        t.start();
        threads.add(t);
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      for (Thread t : threads) {
        // The leader blocks on the monitor; the others park until a commit decides their runs.
        while (t.getState() != Thread.State.BLOCKED && t.getState() != Thread.State.WAITING) {
          assertTrue(System.nanoTime() < deadline, "appending threads never queued");
          Thread.sleep(1);
        }
      }
    }
    assertTrue(finished.await(60, TimeUnit.SECONDS));
    assertEquals(List.of(), List.copyOf(notYetCommitted), "returned before its commit");
    for (Throwable t : outcome) {
      failures.add(t);
    }
    return failures;
  }

  @Test
  void concurrentAppendsShareOneCommitAndAreAllDurable() throws Exception {
    try (RunStore store = RunStore.open(db(), key)) {
      store.append(TestRuns.simple(key, "run-first", 1));
      RunStore.CommitStats before = store.commitStats();
      List<RunRecord> records = new ArrayList<>();
      for (int i = 0; i < 32; i++) {
        records.add(TestRuns.simple(key, "run-" + i, 10 + i));
      }
      List<Throwable> failures = appendTogether(store, records);
      failures.forEach(f -> assertNull(f, String.valueOf(f)));
      RunStore.CommitStats after = store.commitStats();
      assertEquals(1, after.commits() - before.commits(), "one commit for the whole batch");
      assertEquals(32, after.runs() - before.runs());
      assertEquals(33, store.count());
      assertEquals(List.of(), store.verifyAll());
      assertTrue(store.headLine().contains("(33 runs"), store.headLine());
    }
    List<Long> expected = new ArrayList<>();
    for (long i = 0; i < 33; i++) {
      expected.add(i);
    }
    assertEquals(expected, positions());
    try (RunStore reopened = RunStore.open(db(), key)) {
      assertEquals(List.of(), reopened.verifyAll());
      assertEquals(33, reopened.count());
    }
  }

  @Test
  void aRunThatCannotBeStoredFailsAloneInItsBatch() throws Exception {
    try (RunStore store = RunStore.open(db(), key)) {
      store.append(TestRuns.simple(key, "run-dup", 1));
      List<RunRecord> records = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        records.add(TestRuns.simple(key, "run-" + i, 10 + i));
      }
      records.add(4, TestRuns.simple(key, "run-dup", 99));
      List<Throwable> failures = appendTogether(store, records);
      for (int i = 0; i < records.size(); i++) {
        if (i == 4) {
          StoreException e = assertInstanceOf(StoreException.class, failures.get(i));
          assertTrue(e.getMessage().startsWith("run run-dup: not stored"), e.getMessage());
        } else {
          assertNull(failures.get(i), String.valueOf(failures.get(i)));
        }
      }
      assertEquals(9, store.count());
      assertEquals(1, store.run("run-dup").orElseThrow().createdMs());
      assertEquals(List.of(), store.verifyAll());
    }
    assertEquals(List.of(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L), positions());
  }

  @Test
  void runsByOutcomeKeptByCommitsEqualsACountOfTheTable() throws Exception {
    java.util.Map<String, Long> kept;
    try (RunStore store = RunStore.open(db(), key)) {
      store.append(TestRuns.simple(key, "run-first", 1));
      // Counted from the table here; from now on each commit keeps the count.
      assertEquals(java.util.Map.of("Completed", 1L), store.runsByOutcome());
      List<RunRecord> records = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        records.add(TestRuns.simple(key, "run-" + i, 10 + i));
      }
      // Fail in the batch, each alone: neither may be counted.
      records.add(2, TestRuns.simple(key, "run-first", 99));
      records.add(5, misrecorded("run-misrecorded", 98, new byte[] {1, 2, 3}));
      List<Throwable> failures = appendTogether(store, records);
      assertInstanceOf(StoreException.class, failures.get(2));
      assertInstanceOf(StoreException.class, failures.get(5));
      assertThrows(StoreException.class, () -> store.append(TestRuns.simple(key, "run-0", 50)));
      store.appendAll(
          List.of(TestRuns.simple(key, "run-all-1", 60), TestRuns.simple(key, "run-all-2", 61)));
      kept = store.runsByOutcome();
      assertEquals(java.util.Map.of("Completed", 9L), kept);
      assertEquals(9, store.count());
    }
    try (RunStore again = RunStore.open(db(), key)) {
      assertEquals(kept, again.runsByOutcome());
    }
    assertEquals("Completed", RunTable.outcomeKind("\"Completed\""));
    assertEquals(
        "Terminated", RunTable.outcomeKind("{\"Terminated\":{\"breach\":\"Fuel\",\"at\":3}}"));
  }

  @Test
  void aRunAloneInItsBatchThatCannotBeStoredLeavesNothingAndTheNextIsStored() throws Exception {
    // A batch of one is written without a savepoint: its failure must still undo all of it.
    try (RunStore store = RunStore.open(db(), key)) {
      store.append(TestRuns.simple(key, "run-a", 1));
      StoreException e =
          assertThrows(StoreException.class, () -> store.append(TestRuns.simple(key, "run-a", 2)));
      assertTrue(e.getMessage().startsWith("run run-a: not stored"), e.getMessage());
      store.append(TestRuns.simple(key, "run-b", 3));
      assertEquals(2, store.count());
      assertEquals(1, store.run("run-a").orElseThrow().createdMs());
      assertEquals(List.of(), store.verifyAll());
    }
    assertEquals(List.of(0L, 1L), positions());
    try (RunStore again = RunStore.open(db(), key)) {
      assertEquals(List.of(), again.verifyAll());
    }
  }

  @Test
  void aModuleWrittenByARolledBackRunIsStoredByTheNextRunOfIt() throws Exception {
    // The module row is skipped when the unit is already held: that must be read from the store,
    // not remembered, or a rolled-back first run would leave the next runs without their module.
    byte[] module =
        "module of the rolled-back run".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    String unit = io.sandboxd.attest.Blake3.hex(module);
    try (RunStore store = RunStore.open(db(), key)) {
      StoreException alone =
          assertThrows(
              StoreException.class, () -> store.append(misrecorded("run-bad-alone", 1, module)));
      assertTrue(alone.getMessage().contains("outcome differs"), alone.getMessage());
      assertTrue(store.module(unit).isEmpty());
      store.append(TestRuns.record(key, "run-1", 2, List.of(), java.util.Map.of(), module));
      assertEquals(unit, io.sandboxd.attest.Blake3.hex(store.module(unit).orElseThrow()));

      byte[] other = "a second module".getBytes(java.nio.charset.StandardCharsets.UTF_8);
      String otherUnit = io.sandboxd.attest.Blake3.hex(other);
      List<RunRecord> batch = new ArrayList<>();
      batch.add(misrecorded("run-bad-in-batch", 3, other));
      for (int i = 0; i < 4; i++) {
        batch.add(TestRuns.record(key, "run-b" + i, 4 + i, List.of(), java.util.Map.of(), other));
      }
      List<Throwable> failures = appendTogether(store, batch);
      assertInstanceOf(StoreException.class, failures.get(0));
      failures.subList(1, 5).forEach(f -> assertNull(f, String.valueOf(f)));
      assertEquals(otherUnit, io.sandboxd.attest.Blake3.hex(store.module(otherUnit).orElseThrow()));
      assertEquals(List.of(), store.verifyAll());
    }
  }

  private RunRecord misrecorded(String runId, long createdMs, byte[] module) {
    return TestRuns.builder(
            key,
            runId,
            createdMs,
            List.of(),
            java.util.Map.of(),
            module,
            "\"Trapped\"",
            TestRuns.grantsOf(runId))
        .build();
  }

  @Test
  void withoutGroupCommitEachRunHasItsOwnCommit() throws Exception {
    try (RunStore store = RunStore.open(db(), key)) {
      store.maxBatch(1);
      List<RunRecord> records = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        records.add(TestRuns.simple(key, "run-" + i, 10 + i));
      }
      appendTogether(store, records).forEach(f -> assertNull(f, String.valueOf(f)));
      assertEquals(new RunStore.CommitStats(6, 6), store.commitStats());
    }
  }

  @Test
  void manyThreadsAppendingAtRandomLoseNothing() throws Exception {
    RunStore.CommitStats stats = sixteenCallersStoreAll(20261130L, 12, 0, true);
    assertTrue(stats.commits() <= 16 * 12, stats.toString());
  }

  @Test
  void queuesLongerThanABatchHandTheCommitOnWithoutALostWakeUp() throws Exception {
    // Batches of 2 behind 16 callers: most commits leave runs queued, whose first caller must be
    // woken to lead the next one; a lost wake-up leaves callers parked and the count short.
    RunStore.CommitStats stats = sixteenCallersStoreAll(20261203L, 25, 2, false);
    assertTrue(stats.commits() >= 16 * 25 / 2, stats.toString());
  }

  /**
   * Sixteen threads append {@code each} seeded runs apiece (in batches of at most {@code maxBatch}
   * runs when it is above 0); asserts that every run was stored and verifies, and returns the
   * commit counts.
   */
  private RunStore.CommitStats sixteenCallersStoreAll(
      long seed, int each, int maxBatch, boolean checkCommitted) throws Exception {
    try (RunStore store = RunStore.open(db(), key)) {
      if (maxBatch > 0) {
        store.maxBatch(maxBatch);
      }
      List<String> problems = appendFromThreads(store, work(seed, 16, each), checkCommitted);
      assertEquals(List.of(), problems, "seed " + seed);
      assertEquals(16 * each, store.count(), "seed " + seed);
      assertEquals(16 * each, store.commitStats().runs(), "seed " + seed);
      assertEquals(List.of(), store.verifyAll(), "seed " + seed);
      return store.commitStats();
    }
  }

  /** {@code threads} lists of {@code each} runs, seeded. */
  private List<List<RunRecord>> work(long seed, int threads, int each) {
    Random random = new Random(seed);
    List<List<RunRecord>> work = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      List<RunRecord> mine = new ArrayList<>();
      for (int i = 0; i < each; i++) {
        mine.add(TestRuns.simple(key, "run-" + t + "-" + i, random.nextInt(1_000_000)));
      }
      work.add(mine);
    }
    return work;
  }

  /**
   * Appends each list of {@code work} in order from a thread of its own and waits for them all (2
   * minutes each at most). Returns what went wrong: a failed append, a caller still waiting, and
   * with {@code checkCommitted} a run not yet committed when its append returned.
   */
  private List<String> appendFromThreads(
      RunStore store, List<List<RunRecord>> work, boolean checkCommitted) throws Exception {
    ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    List<Thread> all = new ArrayList<>();
    for (List<RunRecord> mine : work) {
      Thread t =
          new Thread(
              () -> {
                for (RunRecord r : mine) {
                  try {
                    store.append(r);
                    if (checkCommitted && !committed(r.runId())) {
                      problems.add(r.runId() + " returned before its commit");
                    }
                  } catch (Exception e) {
                    problems.add(r.runId() + ": " + e);
                  }
                }
              });
      t.start();
      all.add(t);
    }
    for (Thread t : all) {
      t.join(120_000);
      if (t.isAlive()) {
        problems.add(t.getName() + " still waits for its commit");
      }
    }
    return List.copyOf(problems);
  }

  @Test
  void anInterruptedCallerWaitsForItsCommitWithoutSpinningAndKeepsTheInterrupt() throws Exception {
    try (RunStore store = RunStore.open(db(), key)) {
      RunRecord first = TestRuns.simple(key, "run-leader", 1);
      RunRecord second = TestRuns.simple(key, "run-waiter", 2);
      boolean[] interruptedAfter = new boolean[1];
      Throwable[] failure = new Throwable[2];
      Thread leader;
      Thread waiter;
      java.lang.management.ThreadMXBean cpu =
          java.lang.management.ManagementFactory.getThreadMXBean();
      long spent;
      synchronized (store) {
        leader = new Thread(() -> appendOrKeep(store, first, failure, 0));
        leader.start();
        awaitState(leader, Thread.State.BLOCKED);
        waiter =
            new Thread(
                () -> {
                  appendOrKeep(store, second, failure, 1);
                  interruptedAfter[0] = Thread.currentThread().isInterrupted();
                });
        waiter.start();
        awaitState(waiter, Thread.State.WAITING);
        waiter.interrupt();
        long before = cpu.getThreadCpuTime(waiter.getId());
        Thread.sleep(300);
        spent = cpu.getThreadCpuTime(waiter.getId()) - before;
        assertTrue(waiter.isAlive(), "append returned before any commit");
      }
      // A waiter that spun on its interrupt would use about the whole 300 ms.
      assertTrue(spent < TimeUnit.MILLISECONDS.toNanos(100), "waiter used " + spent + " ns");
      leader.join(30_000);
      waiter.join(30_000);
      assertNull(failure[0]);
      assertNull(failure[1]);
      assertTrue(interruptedAfter[0], "the interrupt was lost");
      assertTrue(committed("run-waiter"));
      assertEquals(2, store.count());
    }
  }

  private static void appendOrKeep(RunStore store, RunRecord r, Throwable[] failure, int i) {
    try {
      store.append(r);
    } catch (Throwable e) {
      failure[i] = e;
    }
  }

  private static void awaitState(Thread t, Thread.State state) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (t.getState() != state) {
      assertTrue(System.nanoTime() < deadline, t.getName() + " never became " + state);
      Thread.sleep(1);
    }
  }
}
