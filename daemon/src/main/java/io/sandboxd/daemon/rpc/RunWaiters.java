package io.sandboxd.daemon.rpc;

import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.sandboxd.daemon.BackgroundTimer;
import io.sandboxd.daemon.store.DurableRunTable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * WaitRun and SuspendRun calls held without a thread each: a waiting call is an entry here,
 * answered by one timer thread that reads each waited-on run once per tick, when the run leaves
 * {@code running} or the call's timeout passes; a call the client cancels (or whose connection
 * goes) is dropped at once. Before this, each waiting call held a server thread for up to its whole
 * timeout, also after its client had gone.
 */
final class RunWaiters implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(RunWaiters.class.getName());

  /** Most calls waiting at once on the node; past it a wait is RESOURCE_EXHAUSTED. */
  static final int MAX_WAITING = 100_000;

  static final long TICK_MS = 100;

  /** Longest timeout kept as asked (about 146 years); longer ones wait this long. */
  static final long MAX_TIMEOUT_MS = Long.MAX_VALUE / 2_000_000;

  /**
   * One waiting call; {@code late} is what it is answered when its timeout passes first (null: the
   * run as it is then).
   */
  private record Waiter(
      long deadlineNanos,
      StreamObserver<io.sandboxd.daemon.rpc.DurableRunReply> out,
      AtomicBoolean done,
      Supplier<RuntimeException> late) {}

  private final Function<String, DurableRunTable.Run> lookup;
  private final Function<DurableRunTable.Run, io.sandboxd.daemon.rpc.DurableRunReply> reply;
  private final Map<String, Set<Waiter>> byRun = new ConcurrentHashMap<>();
  private final AtomicInteger waiting = new AtomicInteger();
  private final ScheduledExecutorService timer = BackgroundTimer.named("sandboxd-run-waiters");
  // Timeouts are kept on a clock that never steps: on the wall clock, an NTP step or a resumed VM
  // cut waits short, or held a call for as long as the clock went back.
  private final LongSupplier nanos;

  RunWaiters(
      Function<String, DurableRunTable.Run> lookup,
      Function<DurableRunTable.Run, io.sandboxd.daemon.rpc.DurableRunReply> reply) {
    this(lookup, reply, System::nanoTime);
  }

  /** As above, timeouts kept on {@code nanos} (tests: a clock they move). */
  RunWaiters(
      Function<String, DurableRunTable.Run> lookup,
      Function<DurableRunTable.Run, io.sandboxd.daemon.rpc.DurableRunReply> reply,
      LongSupplier nanos) {
    this.lookup = lookup;
    this.reply = reply;
    this.nanos = nanos;
    timer.scheduleWithFixedDelay(this::tick, TICK_MS, TICK_MS, TimeUnit.MILLISECONDS);
  }

  /** Calls waiting now. */
  int waiting() {
    return waiting.get();
  }

  /**
   * Answers {@code out} when run {@code runId} (running now) stops running or {@code timeoutMs}
   * passes, with the run as it is then; returns at once.
   */
  void await(
      String runId, long timeoutMs, StreamObserver<io.sandboxd.daemon.rpc.DurableRunReply> out) {
    await(runId, timeoutMs, out, null);
  }

  /**
   * As {@link #await(String, long, StreamObserver)}, but a call whose timeout passes while the run
   * still runs is answered with {@code late}'s error (a suspend that found no park boundary).
   */
  void await(
      String runId,
      long timeoutMs,
      StreamObserver<io.sandboxd.daemon.rpc.DurableRunReply> out,
      Supplier<RuntimeException> late) {
    if (waiting.incrementAndGet() > MAX_WAITING) {
      waiting.decrementAndGet();
      out.onError(
          Status.RESOURCE_EXHAUSTED
              .withDescription("this node holds " + MAX_WAITING + " waiting calls already")
              .asRuntimeException());
      return;
    }
    // Saturated: a timeout of years must not wrap round to one already passed.
    long deadline =
        nanos.getAsLong() + TimeUnit.MILLISECONDS.toNanos(Math.min(timeoutMs, MAX_TIMEOUT_MS));
    Waiter w = new Waiter(deadline, out, new AtomicBoolean(), late);
    // compute, not computeIfAbsent then add: the timer drops empty sets with compute too, so a set
    // can never be dropped between being found and being added to (the wait would be lost).
    byRun.compute(
        runId,
        (k, set) -> {
          Set<Waiter> s = set == null ? ConcurrentHashMap.newKeySet() : set;
          s.add(w);
          return s;
        });
    if (out instanceof ServerCallStreamObserver<?> call) {
      // Runs on cancellation or when the connection goes: nothing is left waiting for nobody.
      call.setOnCancelHandler(() -> drop(runId, w));
    }
  }

  private void drop(String runId, Waiter w) {
    if (w.done().compareAndSet(false, true)) {
      waiting.decrementAndGet();
    }
    byRun.computeIfPresent(
        runId,
        (k, s) -> {
          s.remove(w);
          return s;
        });
  }

  private void tick() {
    long now = nanos.getAsLong();
    for (Map.Entry<String, Set<Waiter>> e : byRun.entrySet()) {
      Set<Waiter> set = e.getValue();
      if (set.isEmpty()) {
        byRun.computeIfPresent(e.getKey(), (k, s) -> s.isEmpty() ? null : s);
        continue;
      }
      DurableRunTable.Run run;
      io.sandboxd.daemon.rpc.DurableRunReply answer = null;
      RuntimeException failure = null;
      try {
        run = lookup.apply(e.getKey());
        if (run.state() != DurableRunTable.State.running) {
          answer = reply.apply(run);
        }
      } catch (RuntimeException ex) {
        run = null;
        failure = ex;
      }
      List<Waiter> due = new ArrayList<>();
      for (Waiter w : set) {
        if (failure != null || answer != null || now - w.deadlineNanos() >= 0) {
          due.add(w);
        }
      }
      if (due.isEmpty()) {
        continue;
      }
      boolean stillRunning = answer == null && failure == null;
      if (stillRunning) {
        try {
          answer = reply.apply(run);
        } catch (RuntimeException ex) {
          failure = ex;
        }
      }
      for (Waiter w : due) {
        set.remove(w);
        if (!w.done().compareAndSet(false, true)) {
          continue;
        }
        waiting.decrementAndGet();
        try {
          if (stillRunning && w.late() != null) {
            w.out().onError(ErrorStatus.of(w.late().get()).asRuntimeException());
          } else if (failure != null) {
            w.out().onError(ErrorStatus.of(failure).asRuntimeException());
          } else {
            w.out().onNext(answer);
            w.out().onCompleted();
          }
        } catch (RuntimeException gone) {
          // The call was cancelled between the check and the answer: nobody to tell.
          LOG.log(Level.FINE, "waiting call gone", gone);
        }
      }
    }
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
