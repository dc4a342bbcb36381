package io.sandboxd.executor;

import static io.sandboxd.executor.ExecutorTest.COMPILER;
import static io.sandboxd.executor.ExecutorTest.DEEP;
import static io.sandboxd.executor.ExecutorTest.HELLO;
import static io.sandboxd.executor.ExecutorTest.LOG_ONLY;
import static io.sandboxd.executor.ExecutorTest.SPIN;
import static io.sandboxd.executor.ExecutorTest.grants;
import static io.sandboxd.executor.ExecutorTest.recursing;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.Outcome;
import io.sandboxd.enforcer.Grants;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A caller on a {@link UnitThread} runs its unit in place: the same hard budgets as on the pool's
 * threads, the same bound on units at once and on units waiting, and a close that stops them.
 */
class ExecutorInPlaceTest {
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private static final Grants ENDLESS = grants(LOG_ONLY, 600_000, 1 << 20, 9_000_000_000_000_000L);

  /** What a call made on a fresh unit thread returned, and how that thread was left. */
  record OnUnitThread<T>(T value, RuntimeException thrown, boolean interruptedAfter, long cpu) {}

  static <T> CompletableFuture<OnUnitThread<T>> onUnitThread(Supplier<T> call) {
    return onThread(UnitThread.factory("test-unit-"), call);
  }

  /** The same on a plain thread: its unit runs on one of the executor's threads. */
  static <T> CompletableFuture<OnUnitThread<T>> onPlainThread(Supplier<T> call) {
    return onThread(Thread::new, call);
  }

  /** Completes once the thread has ended, so a seat it held for in-place runs is free again. */
  static <T> CompletableFuture<OnUnitThread<T>> onThread(
      java.util.concurrent.ThreadFactory threads, Supplier<T> call) {
    AtomicReference<OnUnitThread<T>> done = new AtomicReference<>();
    Thread t =
        threads.newThread(
            () -> {
              long cpu0 = THREADS.getCurrentThreadCpuTime();
              T value = null;
              RuntimeException thrown = null;
              try {
                value = call.get();
              } catch (RuntimeException e) {
                thrown = e;
              }
              done.set(
                  new OnUnitThread<>(
                      value,
                      thrown,
                      Thread.currentThread().isInterrupted(),
                      THREADS.getCurrentThreadCpuTime() - cpu0));
            });
    t.start();
    return CompletableFuture.supplyAsync(
        () -> {
          try {
            t.join();
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
          return done.get();
        },
        task -> new Thread(task).start());
  }

  static ExecutionResult run(Executor ex, String wat, Grants g) {
    return ex.execute(new UnitRequest("r", COMPILER.compile(Wat2Wasm.parse(wat)), "run", g));
  }

  static <T> OnUnitThread<T> await(CompletableFuture<OnUnitThread<T>> f) throws Exception {
    return f.get(60, TimeUnit.SECONDS);
  }

  @Test
  void aUnitRunsOnItsCallersThreadUnderItsCpuBudget() throws Exception {
    try (Executor ex = new Executor(2, EnergyModel.estimate(10_000), 60_000)) {
      Grants g = grants(LOG_ONLY, 50, 1 << 20, 9_000_000_000_000_000L);
      OnUnitThread<ExecutionResult> spun = await(onUnitThread(() -> run(ex, SPIN, g)));
      assertEquals(new Outcome.Terminated(Outcome.Breach.CpuTime), spun.value().outcome());
      // The caller's own thread spent the unit's CPU time: it ran there, not on a pool thread.
      assertTrue(spun.cpu() >= 50_000_000L, "caller's CPU " + spun.cpu());
      assertTrue(spun.value().cpuTimeNanos() > 50_000_000L);
      // Caught within the watchdog's ticks, not at the end of a long budget.
      assertTrue(spun.value().cpuTimeNanos() < 1_000_000_000L, "" + spun.value().cpuTimeNanos());
      // The watchdog's stop is the unit's: the caller's thread is not left interrupted.
      assertFalse(spun.interruptedAfter());
    }
  }

  @Test
  void theNextUnitOnTheSameCallersThreadRunsClean() throws Exception {
    try (Executor ex = new Executor(2, EnergyModel.estimate(10_000), 60_000)) {
      Grants tight = grants(LOG_ONLY, 20, 1 << 20, 9_000_000_000_000_000L);
      Grants ok = grants(LOG_ONLY, 5_000, 1 << 20, 1_000_000_000);
      OnUnitThread<List<Outcome>> both =
          await(
              onUnitThread(
                  () ->
                      List.of(
                          run(ex, SPIN, tight).outcome(),
                          run(ex, HELLO, ok).outcome(),
                          run(ex, recursing(DEEP), ok).outcome())));
      assertEquals(
          List.of(
              new Outcome.Terminated(Outcome.Breach.CpuTime),
              new Outcome.Completed(),
              // A unit thread has a unit's stack, in place too.
              new Outcome.Completed()),
          both.value());
    }
  }

  @Test
  void energyAndTheDaemonsWallClockAreHardInPlaceToo() throws Exception {
    try (Executor ex = new Executor(1, EnergyModel.estimate(10_000), 60_000);
        Executor brief = new Executor(1, EnergyModel.estimate(10_000), 100)) {
      OnUnitThread<ExecutionResult> energy =
          await(onUnitThread(() -> run(ex, SPIN, grants(LOG_ONLY, 60_000, 1 << 20, 1_000))));
      assertEquals(new Outcome.Terminated(Outcome.Breach.EnergyBudget), energy.value().outcome());
      OnUnitThread<ExecutionResult> wall = await(onUnitThread(() -> run(brief, SPIN, ENDLESS)));
      assertEquals(
          new Outcome.Failed("wall-clock limit of the daemon exceeded"), wall.value().outcome());
      assertFalse(wall.interruptedAfter());
    }
  }

  /**
   * In place or on the pool alike: the caller's interrupt stops its unit, the outcome is read once
   * the guest ended (before, a caller on the pool read it at once: a run cut short said Completed),
   * and the caller's thread is left interrupted.
   */
  @ParameterizedTest(name = "in place: {0}")
  @ValueSource(booleans = {true, false})
  void aCallersOwnInterruptStopsItsUnitAndStaysSet(boolean inPlace) throws Exception {
    try (Executor ex = new Executor(1, EnergyModel.estimate(10_000), 60_000)) {
      List<Thread> started = new ArrayList<>();
      CompletableFuture<OnUnitThread<ExecutionResult>> f =
          onThread(
              inPlace ? UnitThread.factory("test-unit-") : Thread::new,
              () -> {
                synchronized (started) {
                  started.add(Thread.currentThread());
                  started.notifyAll();
                }
                return run(ex, SPIN, ENDLESS);
              });
      Thread caller;
      synchronized (started) {
        while (started.isEmpty()) {
          started.wait();
        }
        caller = started.get(0);
      }
      waitUntil(ex::saturated);
      caller.interrupt();
      OnUnitThread<ExecutionResult> r = await(f);
      assertEquals(new Outcome.Failed("interrupted"), r.value().outcome());
      assertTrue(r.interruptedAfter(), "the caller's interrupt was swallowed");
    }
  }

  /**
   * A caller interrupted before its call: its unit is stopped even when the interrupt comes before
   * the unit has a thread (on the pool it then never starts), instead of spinning for its budget.
   */
  @ParameterizedTest(name = "in place: {0}")
  @ValueSource(booleans = {true, false})
  void aCallerInterruptedBeforeItsCallStopsItsUnit(boolean inPlace) throws Exception {
    // Compiled first: a compile on an interrupted thread is refused before any unit runs.
    CompiledUnit spin = COMPILER.compile(Wat2Wasm.parse(SPIN));
    // Whether the caller's stop or the pool thread's start comes first is a race: run it often.
    for (int i = 0; i < 20; i++) {
      try (Executor ex = new Executor(1, EnergyModel.estimate(10_000), 60_000)) {
        OnUnitThread<ExecutionResult> r =
            await(
                onThread(
                    inPlace ? UnitThread.factory("test-unit-") : Thread::new,
                    () -> {
                      Thread.currentThread().interrupt();
                      return ex.execute(new UnitRequest("r", spin, "run", ENDLESS));
                    }));
        assertEquals(new Outcome.Failed("interrupted"), r.value().outcome(), "round " + i);
        assertTrue(r.interruptedAfter(), "the caller's interrupt was swallowed");
      }
    }
  }

  @Test
  void unitsAtOnceAndUnitsWaitingAreBoundedAndACloseStopsThemAll() throws Exception {
    Executor ex = new Executor(1, EnergyModel.estimate(10_000), 60_000);
    CompletableFuture<OnUnitThread<ExecutionResult>> running =
        onUnitThread(() -> run(ex, SPIN, ENDLESS));
    waitUntil(ex::saturated);
    // One slot: 64 more wait for it (the bound for one slot), in place and on the pool alike.
    List<CompletableFuture<OnUnitThread<ExecutionResult>>> waiting = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      waiting.add(
          i % 2 == 0
              ? onUnitThread(() -> run(ex, HELLO, ENDLESS))
              : onPlainThread(() -> run(ex, HELLO, ENDLESS)));
    }
    waitUntil(() -> ex.waiting() == 64);
    // The next is refused, not queued: a flood holds no more than the bound.
    OnUnitThread<ExecutionResult> refused = await(onUnitThread(() -> run(ex, HELLO, ENDLESS)));
    assertNotNull(refused.thrown());
    assertEquals(ExecutorBusyException.class, refused.thrown().getClass());
    assertEquals("node busy: 64 units already wait for a thread", refused.thrown().getMessage());
    for (CompletableFuture<OnUnitThread<ExecutionResult>> w : waiting) {
      assertFalse(w.isDone(), "ran past the one slot");
    }
    // A close stops the unit running in place (its budgets would have let it run 10 minutes),
    // and the waiting ones end without running.
    ex.close();
    assertEquals(new Outcome.Failed("interrupted"), await(running).value().outcome());
    assertFalse(await(running).interruptedAfter());
    for (CompletableFuture<OnUnitThread<ExecutionResult>> w : waiting) {
      OnUnitThread<ExecutionResult> r = await(w);
      assertNotNull(r.thrown(), "ran after the close");
      assertEquals("node busy: the executor is closed", r.thrown().getMessage());
    }
    OnUnitThread<ExecutionResult> after = await(onUnitThread(() -> run(ex, HELLO, ENDLESS)));
    assertEquals("node busy: the executor is closed", after.thrown().getMessage());
  }

  /** Recurses {@code DEEP} calls down (committing stack pages), then spins out its CPU budget. */
  static final String DEEP_THEN_SPIN =
      """
      (module
        (func $down (param i32) (result i32)
          (if (result i32) (i32.eqz (local.get 0))
            (then (i32.const 0))
            (else (call $down (i32.sub (local.get 0) (i32.const 1))))))
        (func (export "run") (result i32)
          (drop (call $down (i32.const %d)))
          (loop $l (br $l))
          (i32.const 0)))
      """
          .formatted(DEEP);

  /** A run and the CPU time its caller's thread spent in the call. */
  record Ran(ExecutionResult result, long callCpu) {}

  @Test
  void aFloodOfDeepUnitsFromManyThreadsRunsInPlaceOnAFewThreadsForEachSlot() throws Exception {
    // Each caller is a unit thread, as each of the daemon's handler threads is; all stay alive
    // until every run has ended, as idle handler threads do. Only the seated ones run in place:
    // the pages a deep unit commits stay with its thread, so the threads that ran one must be a
    // few for each slot, not as many as the callers.
    int slots = 2;
    int seats = Executor.seats(slots);
    int callers = 2 * seats;
    Grants g = grants(LOG_ONLY, 30, 1 << 20, 9_000_000_000_000_000L);
    // Compiled once, so a caller's CPU time in its call is the call's alone.
    UnitRequest deep =
        new UnitRequest("r", COMPILER.compile(Wat2Wasm.parse(DEEP_THEN_SPIN)), "run", g);
    try (Executor ex = new Executor(slots, EnergyModel.estimate(10_000), 60_000)) {
      for (int wave = 0; wave < 2; wave++) {
        CountDownLatch allRan = new CountDownLatch(callers);
        List<CompletableFuture<OnUnitThread<Ran>>> runs = new ArrayList<>();
        for (int i = 0; i < callers; i++) {
          runs.add(
              onUnitThread(
                  () -> {
                    long cpu0 = THREADS.getCurrentThreadCpuTime();
                    ExecutionResult r = ex.execute(deep);
                    Ran ran = new Ran(r, THREADS.getCurrentThreadCpuTime() - cpu0);
                    allRan.countDown();
                    try {
                      allRan.await();
                    } catch (InterruptedException e) {
                      throw new IllegalStateException(e);
                    }
                    return ran;
                  }));
        }
        int inPlace = 0;
        for (CompletableFuture<OnUnitThread<Ran>> f : runs) {
          Ran r = await(f).value();
          assertEquals(
              new Outcome.Terminated(Outcome.Breach.CpuTime), r.result().outcome(), "wave " + wave);
          // In place, the call's CPU holds the unit's (30 ms at least); on the pool, only the
          // caller's waiting for it.
          if (r.callCpu() >= r.result().cpuTimeNanos() / 2) {
            inPlace++;
          }
        }
        assertTrue(inPlace >= 1 && inPlace <= seats, "wave " + wave + ": in place " + inPlace);
        // Every caller ended, and its seat with it: the next wave finds them free.
        waitUntil(() -> ex.seated() == 0);
      }
    }
  }

  static void waitUntil(Supplier<Boolean> condition) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!condition.get()) {
      assertTrue(System.nanoTime() < end, "condition not reached in 30 s");
      Thread.sleep(5);
    }
  }
}
