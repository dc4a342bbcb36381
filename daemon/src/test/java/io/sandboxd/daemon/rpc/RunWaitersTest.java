package io.sandboxd.daemon.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.stub.StreamObserver;
import io.sandboxd.daemon.store.DurableRunTable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Waiting calls time out on the clock that never steps, whatever the wall clock does. */
class RunWaitersTest {
  private static DurableRunTable.Run running(String id) {
    return new DurableRunTable.Run(
        id, DurableRunTable.State.running, 1, 1, "u", "{}", "g", "step", "", "", false, false);
  }

  /** Counts the answers it gets. */
  private static final class Answers implements StreamObserver<DurableRunReply> {
    final CountDownLatch answered = new CountDownLatch(1);

    @Override
    public void onNext(DurableRunReply value) {}

    @Override
    public void onError(Throwable t) {
      answered.countDown();
    }

    @Override
    public void onCompleted() {
      answered.countDown();
    }
  }

  @Test
  void aWaitEndsWhenItsTimeHasPassedOnTheMonotonicClockAndNotBefore() throws Exception {
    AtomicLong nanos = new AtomicLong(Long.MAX_VALUE - TimeUnit.SECONDS.toNanos(1));
    try (RunWaiters waiters =
        new RunWaiters(
            RunWaitersTest::running,
            r -> DurableRunReply.newBuilder().setRunId(r.runId()).build(),
            nanos::get)) {
      Answers a = new Answers();
      waiters.await("run-1", 5_000, a);
      // Ticks go by (the wall clock moves, whatever it reads): the monotonic clock has not.
      assertFalse(a.answered.await(3 * RunWaiters.TICK_MS, TimeUnit.MILLISECONDS));
      assertEquals(1, waiters.waiting());
      // 4.9 s later, across the monotonic clock's wrap: not yet.
      nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(4_900));
      assertFalse(a.answered.await(3 * RunWaiters.TICK_MS, TimeUnit.MILLISECONDS));
      nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
      assertTrue(a.answered.await(10, TimeUnit.SECONDS), "answered once its 5 s had passed");
      assertEquals(0, waiters.waiting());

      // A timeout of centuries neither wraps round to one already passed nor fails.
      Answers forever = new Answers();
      waiters.await("run-2", Long.MAX_VALUE, forever);
      assertFalse(forever.answered.await(3 * RunWaiters.TICK_MS, TimeUnit.MILLISECONDS));
      assertEquals(1, waiters.waiting());
    }
  }
}
