package io.sandboxd.daemon.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** Which of a bench client's calls count: those it began in the measured window, and only they. */
class BenchLoopTest {
  private static final SubmitReply COMPLETED =
      SubmitReply.newBuilder().setOutcomeJson("\"Completed\"").build();

  /**
   * A submit that takes {@code firstMs} the first time and {@code thenMs} after; logs its starts.
   */
  private static Supplier<SubmitReply> slowFirst(
      long firstMs, long thenMs, List<Long> starts, RuntimeException failAfterFirst) {
    return () -> {
      starts.add(System.nanoTime());
      sleep(starts.size() == 1 ? firstMs : thenMs);
      if (starts.size() > 1 && failAfterFirst != null) {
        throw failAfterFirst;
      }
      return COMPLETED;
    };
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aCallBegunInTheWarmupIsNotCountedEvenWhenItEndsInTheWindow() {
    List<Long> starts = new ArrayList<>();
    long now = System.nanoTime();
    long measureFrom = now + TimeUnit.MILLISECONDS.toNanos(50);
    long end = measureFrom + TimeUnit.MILLISECONDS.toNanos(300);
    BenchCommand.ClientTally tally = new BenchCommand.ClientTally();
    AtomicReference<StatusRuntimeException> firstError = new AtomicReference<>();
    // The first call outlasts the warm-up by far, as a fresh daemon's first run by bytes does.
    BenchCommand.loop(slowFirst(250, 2, starts, null), measureFrom, end, tally, firstError);
    assertNull(firstError.get());
    assertTrue(starts.get(0) < measureFrom, "the first call began in the warm-up");
    assertTrue(starts.get(1) >= measureFrom, "the second began in the window");
    assertEquals(starts.size() - 1, tally.runs, "every call but the first is counted");
    assertTrue(
        tally.latencyNanos.getMaxValue() < TimeUnit.MILLISECONDS.toNanos(250),
        "the first call's latency is not the window's: " + tally.latencyNanos.getMaxValue());
    assertEquals(0, tally.notCompleted);
  }

  @Test
  void aCallBegunInTheWindowIsCountedEvenWhenItEndsAfterIt() {
    List<Long> starts = new ArrayList<>();
    long measureFrom = System.nanoTime();
    long end = measureFrom + TimeUnit.MILLISECONDS.toNanos(20);
    BenchCommand.ClientTally tally = new BenchCommand.ClientTally();
    BenchCommand.loop(
        slowFirst(200, 2, starts, null), measureFrom, end, tally, new AtomicReference<>());
    assertEquals(1, starts.size(), "one call, begun in the window, ended after it");
    assertEquals(1, tally.runs);
    assertTrue(tally.latencyNanos.getMaxValue() >= TimeUnit.MILLISECONDS.toNanos(200));
  }

  @Test
  void errorsAreCountedByWhenTheirCallBegan() {
    List<Long> starts = new ArrayList<>();
    long measureFrom = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100);
    long end = measureFrom + TimeUnit.MILLISECONDS.toNanos(100);
    BenchCommand.ClientTally tally = new BenchCommand.ClientTally();
    AtomicReference<StatusRuntimeException> firstError = new AtomicReference<>();
    StatusRuntimeException busy = Status.RESOURCE_EXHAUSTED.asRuntimeException();
    BenchCommand.loop(slowFirst(1, 5, starts, busy), measureFrom, end, tally, firstError);
    long inWindow = starts.stream().filter(t -> t >= measureFrom).count();
    long failedInWarmup = starts.size() - 1 - inWindow;
    assertTrue(failedInWarmup > 0, "some calls failed in the warm-up");
    // Within one call of the window's edge: the loop's clock is read just before the call's.
    assertTrue(Math.abs(tally.errors - inWindow) <= 1, tally.errors + " vs " + inWindow);
    assertEquals(0, tally.runs, "the one success was in the warm-up");
    assertEquals(busy, firstError.get());
  }
}
