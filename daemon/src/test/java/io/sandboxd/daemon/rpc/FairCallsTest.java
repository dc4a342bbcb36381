package io.sandboxd.daemon.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * FairCalls: a flooding connection, or a flooding uid over many connections, keeps to its share,
 * another connection's task runs while the flood blocks, and nothing is kept for connections gone.
 */
class FairCallsTest {

  @Test
  void aFloodingConnectionHoldsItsShareAndAnotherConnectionStillRuns() throws Exception {
    try (FairCalls calls = new FairCalls(8, 4, 7)) {
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger started = new AtomicInteger();
      flood(calls.lane("a", "uid 1"), 100, started, release);
      waitFor(() -> started.get() == 4);
      CountDownLatch other = new CountDownLatch(1);
      calls.lane("b", "uid 1").execute(other::countDown);
      assertTrue(other.await(30, TimeUnit.SECONDS), "the second connection's task never ran");
      // The flood is blocked: it started no more than its connection's share.
      assertEquals(4, started.get());
      release.countDown();
      waitFor(() -> started.get() == 100);
      assertTrue(calls.busiest() <= 8, "ran " + calls.busiest() + " at once on 8 threads");
      waitFor(() -> calls.lanes() == 0);
    }
  }

  @Test
  void aUidFloodingOverManyConnectionsLeavesAThreadForAnotherUid() throws Exception {
    try (FairCalls calls = new FairCalls(8, 4, 6)) {
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger started = new AtomicInteger();
      for (int c = 0; c < 10; c++) {
        flood(calls.lane("conn " + c, "uid 1"), 20, started, release);
      }
      waitFor(() -> started.get() == 6);
      CountDownLatch other = new CountDownLatch(1);
      calls.lane("conn x", "uid 2").execute(other::countDown);
      assertTrue(other.await(30, TimeUnit.SECONDS), "another uid's task never ran");
      assertEquals(6, started.get(), "uid 1 holds its share, no more");
      release.countDown();
      waitFor(() -> started.get() == 200);
      waitFor(() -> calls.lanes() == 0);
    }
  }

  @Test
  void connectionsTakeTurnsInsteadOfArrivalOrder() throws Exception {
    // One thread: the order tasks run in is the order lanes are served.
    try (FairCalls calls = new FairCalls(1, 1, 1)) {
      CountDownLatch hold = new CountDownLatch(1);
      Executor a = calls.lane("a", "a");
      Executor b = calls.lane("b", "b");
      StringBuffer order = new StringBuffer();
      a.execute(() -> await(hold));
      for (int i = 0; i < 5; i++) {
        a.execute(() -> order.append('a'));
      }
      for (int i = 0; i < 5; i++) {
        b.execute(() -> order.append('b'));
      }
      hold.countDown();
      waitFor(() -> order.length() == 10);
      // b waited while a's first task held the thread, so it goes first; then they alternate,
      // where arrival order would have run all of a's before any of b's.
      assertEquals("bababababa", order.toString());
    }
  }

  /**
   * Queues {@code tasks} tasks on {@code lane}, each counted in {@code started} as it begins and
   * then held until {@code release}.
   */
  private static void flood(
      Executor lane, int tasks, AtomicInteger started, CountDownLatch release) {
    for (int i = 0; i < tasks; i++) {
      lane.execute(
          () -> {
            started.incrementAndGet();
            await(release);
          });
    }
  }

  private static void await(CountDownLatch l) {
    try {
      l.await(60, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void waitFor(java.util.function.BooleanSupplier done) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "condition not reached in 30 s");
      Thread.sleep(10);
    }
  }
}
