package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.Outcome;
import io.sandboxd.enforcer.Grants;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Every {@link ExecutorTest} case again, called from a unit-capable thread (as the daemon's call
 * threads are), so that the units run on the caller's own thread under the watchdog thread; plus
 * what only that path has: the caller's interrupt, places shared with unit threads, close().
 */
class ExecutorOnCallersThreadTest extends ExecutorTest {
  static final Executor HERE = new Executor(2, EnergyModel.estimate(10_000), 60_000);

  // Hides ExecutorTest.close: this class closes its own executor, not the other class's.
  @AfterAll
  static void close() {
    HERE.close();
  }

  @Override
  Executor executor() {
    return HERE;
  }

  /** Runs {@code body} on a new unit-capable thread and checks its units ran on that thread. */
  @Override
  <T> T from(Supplier<T> body) {
    return onCallersThread(body, true);
  }

  /** As {@link #from}; {@code mustRunHere}: every unit the body runs must have run inline. */
  static <T> T onCallersThread(Supplier<T> body, boolean mustRunHere) {
    AtomicReference<T> result = new AtomicReference<>();
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    AtomicBoolean interruptedAfter = new AtomicBoolean();
    long before = ranHereSoFar();
    Thread t =
        Executor.unitCapableThread(
            () -> {
              try {
                result.set(body.get());
              } catch (Throwable e) {
                thrown.set(e);
              }
              interruptedAfter.set(Thread.currentThread().isInterrupted());
            },
            "test-caller");
    t.start();
    try {
      t.join(TimeUnit.MINUTES.toMillis(2));
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
    assertFalse(t.isAlive(), "the caller's thread did not finish");
    if (thrown.get() instanceof RuntimeException e) {
      throw e;
    }
    if (thrown.get() instanceof Error e) {
      throw e;
    }
    // A watchdog stop must not leave the caller's thread interrupted.
    assertFalse(interruptedAfter.get(), "the caller's thread was left interrupted");
    if (mustRunHere) {
      assertTrue(ranHereSoFar() > before, "no unit ran on the caller's thread");
    }
    return result.get();
  }

  /** Inline runs so far of every executor the inherited cases use. */
  private static long ranHereSoFar() {
    return HERE.ranOnCallersThreads()
        + MADE.stream().mapToLong(Executor::ranOnCallersThreads).sum();
  }

  // The executors inherited cases made for limits of their own.
  private static final java.util.Queue<Executor> MADE =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  @Override
  Executor newExecutor(int maxConcurrent, long maxWallMillis, HostServices services) {
    Executor e = super.newExecutor(maxConcurrent, maxWallMillis, services);
    MADE.add(e);
    return e;
  }

  static final Grants LONG = grants(LOG_ONLY, 600_000, 1 << 20, 9_000_000_000_000_000L);

  @Test
  void aCallersOwnInterruptStopsTheUnitAndStaysSet() throws InterruptedException {
    CompiledUnit spin = COMPILER.compile(Wat2Wasm.parse(SPIN));
    AtomicReference<ExecutionResult> result = new AtomicReference<>();
    AtomicBoolean stillInterrupted = new AtomicBoolean();
    CountDownLatch started = new CountDownLatch(1);
    long before = HERE.ranOnCallersThreads();
    Thread caller =
        Executor.unitCapableThread(
            () -> {
              started.countDown();
              result.set(HERE.execute(new UnitRequest("r", spin, "run", LONG)));
              stillInterrupted.set(Thread.currentThread().isInterrupted());
            },
            "test-caller");
    caller.start();
    started.await();
    // Let the guest get going on the caller's thread, then interrupt the caller itself.
    Thread.sleep(100);
    caller.interrupt();
    caller.join(TimeUnit.SECONDS.toMillis(30));
    assertFalse(caller.isAlive());
    assertEquals(new Outcome.Failed("interrupted"), result.get().outcome());
    assertTrue(stillInterrupted.get(), "the caller's own interrupt was swallowed");
    assertEquals(before + 1, HERE.ranOnCallersThreads());
  }

  /**
   * Starts a unit-capable thread executing {@code wat} on {@code ex} into {@code result}, and
   * returns it once the unit runs there (it holds one of {@code ex}'s places).
   */
  static Thread runningInline(
      Executor ex, String wat, Grants g, AtomicReference<ExecutionResult> result)
      throws InterruptedException {
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(wat));
    long before = ex.ranOnCallersThreads();
    Thread t =
        Executor.unitCapableThread(
            () -> result.set(ex.execute(new UnitRequest("inline", unit, "run", g))), "test-caller");
    t.start();
    while (ex.ranOnCallersThreads() == before) {
      Thread.sleep(1);
    }
    return t;
  }

  @Test
  void whenEveryPlaceIsTakenACallerWaitsForOneAndThenRunsItsUnitItself()
      throws InterruptedException {
    try (Executor one = new Executor(1, EnergyModel.estimate(10_000), 60_000)) {
      AtomicReference<ExecutionResult> spun = new AtomicReference<>();
      Grants brief = grants(LOG_ONLY, 300, 1 << 20, 9_000_000_000_000_000L);
      Thread spinner = runningInline(one, SPIN, brief, spun);
      assertTrue(one.saturated(), "the spinner holds the only place");
      CompiledUnit hello = COMPILER.compile(Wat2Wasm.parse(HELLO));
      Grants g = grants(LOG_ONLY, 5_000, 1 << 20, 1_000_000_000);
      ExecutionResult r =
          onCallersThread(() -> one.execute(new UnitRequest("h", hello, "run", g)), false);
      spinner.join();
      assertEquals(new Outcome.Completed(), r.outcome());
      assertEquals(new Outcome.Terminated(Outcome.Breach.CpuTime), spun.get().outcome());
      // Hello waited for the spinner's place, then ran on its own caller's thread too.
      assertEquals(2, one.ranOnCallersThreads());
      assertFalse(one.saturated());
    }
  }

  @Test
  void pastTheQueuesBoundWaitingCallersAreRefusedAsBusy() throws InterruptedException {
    // One place, so 64 callers may wait for it (the unit threads' queue bound): the 65th is busy.
    Executor one = new Executor(1, EnergyModel.estimate(10_000), 600_000);
    Thread spinner = runningInline(one, SPIN, LONG, new AtomicReference<>());
    CompiledUnit hello = COMPILER.compile(Wat2Wasm.parse(HELLO));
    Grants g = grants(LOG_ONLY, 5_000, 1 << 20, 1_000_000_000);
    List<Thread> waiters = new ArrayList<>();
    List<ExecutionResult> waited = java.util.Collections.synchronizedList(new ArrayList<>());
    for (int i = 0; i < 64; i++) {
      Thread t =
          Executor.unitCapableThread(
              () -> waited.add(one.execute(new UnitRequest("w", hello, "run", g))), "waiter");
      t.start();
      waiters.add(t);
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (waiters.stream().anyMatch(t -> t.getState() != Thread.State.WAITING)) {
      assertTrue(System.nanoTime() < deadline, "the waiters never waited");
      Thread.sleep(1);
    }
    ExecutorBusyException busy =
        assertThrows(
            ExecutorBusyException.class,
            () ->
                onCallersThread(
                    () -> one.execute(new UnitRequest("late", hello, "run", g)), false));
    assertEquals("node busy: 64 units already wait for a place", busy.getMessage());
    // Closing stops the spinner; the waiters then get the place one by one and start nothing.
    one.close();
    spinner.join();
    for (Thread t : waiters) {
      t.join(TimeUnit.SECONDS.toMillis(30));
      assertFalse(t.isAlive());
    }
    assertEquals(64, waited.size());
    for (ExecutionResult r : waited) {
      assertEquals(new Outcome.Failed("the daemon shut down before the unit started"), r.outcome());
    }
  }

  @Test
  void aCallerInterruptedWhileItWaitsForAPlaceStartsNothingAndStaysInterrupted()
      throws InterruptedException {
    try (Executor one = new Executor(1, EnergyModel.estimate(10_000), 600_000)) {
      Thread spinner = runningInline(one, SPIN, LONG, new AtomicReference<>());
      CompiledUnit hello = COMPILER.compile(Wat2Wasm.parse(HELLO));
      Grants g = grants(LOG_ONLY, 5_000, 1 << 20, 1_000_000_000);
      AtomicReference<ExecutionResult> result = new AtomicReference<>();
      AtomicBoolean stillInterrupted = new AtomicBoolean();
      Thread waiter =
          Executor.unitCapableThread(
              () -> {
                result.set(one.execute(new UnitRequest("w", hello, "run", g)));
                stillInterrupted.set(Thread.currentThread().isInterrupted());
              },
              "waiter");
      waiter.start();
      while (waiter.getState() != Thread.State.WAITING) {
        Thread.sleep(1);
      }
      waiter.interrupt();
      waiter.join(TimeUnit.SECONDS.toMillis(30));
      assertEquals(
          new Outcome.Failed("interrupted before the unit started"), result.get().outcome());
      assertTrue(stillInterrupted.get());
      assertEquals(0, result.get().hostCalls());
      // Only the spinner ever ran.
      assertEquals(1, one.ranOnCallersThreads());
      one.close();
      spinner.join();
    }
  }

  @Test
  void closeStopsAUnitRunningOnItsCallersThread() throws InterruptedException {
    Executor closing = new Executor(1, EnergyModel.estimate(10_000), 600_000);
    AtomicReference<ExecutionResult> result = new AtomicReference<>();
    Thread caller = runningInline(closing, SPIN, LONG, result);
    Thread.sleep(50);
    closing.close();
    caller.join(TimeUnit.SECONDS.toMillis(30));
    assertFalse(caller.isAlive(), "close() left the unit running");
    assertEquals(new Outcome.Failed("interrupted"), result.get().outcome());
    // A closed executor runs nothing on a caller's thread any more: it is refused as before.
    CompiledUnit spin = COMPILER.compile(Wat2Wasm.parse(SPIN));
    assertThrows(
        ExecutorBusyException.class,
        () ->
            onCallersThread(() -> closing.execute(new UnitRequest("l", spin, "run", LONG)), false));
    assertEquals(1, closing.ranOnCallersThreads());
  }
}
