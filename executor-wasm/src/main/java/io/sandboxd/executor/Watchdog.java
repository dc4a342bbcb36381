package io.sandboxd.executor;

import io.sandboxd.attest.Outcome;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Checks the budgets of every running unit from one thread: each unit's CPU time and energy, and
 * the daemon's wall-clock limit, on ticks each unit's own budget sets, and stops a unit that goes
 * past one. The units run on their callers' threads or the executor's and never wait on it: a unit
 * that ends between two ticks is checked once more by {@link Executor} itself.
 */
final class Watchdog implements AutoCloseable {
  static final long MIN_TICK_NANOS = 1_000_000;
  static final long MAX_TICK_NANOS = 20_000_000;
  // Idle ticks before the thread parks until a unit comes: an idle node is not woken 50 times a
  // second for ever, and a busy one does not wake the thread for each unit it starts.
  private static final int IDLE_TICKS = 50;

  /** The unit side of a watch: whether its code runs now, its CPU time so far, and its stop. */
  interface Guest {
    boolean running();

    long cpuSoFar();

    void stop();
  }

  /** What the watchdog found: the budget a unit went past, or that it ran out of wall time. */
  record Verdict(Outcome.Breach breach, boolean wallLimitHit) {
    static final Verdict NONE = new Verdict(null, false);
  }

  /** One unit under watch: its budgets, its next tick and, once found, its verdict. */
  static final class Watch {
    private final Guest guest;
    private final long cpuBudgetNanos;
    private final long energyBudgetUj;
    private final EnergyModel.Session meter;
    private final long deadline;
    // The next tick (System.nanoTime); guarded by the watchdog's lock while queued.
    private long due;
    // Guarded by this: a check and the unit's end never interleave.
    private boolean ended;
    private Verdict verdict = Verdict.NONE;

    private Watch(
        Guest guest,
        long cpuBudgetNanos,
        long energyBudgetUj,
        EnergyModel.Session meter,
        long wall) {
      this.guest = guest;
      this.cpuBudgetNanos = cpuBudgetNanos;
      this.energyBudgetUj = energyBudgetUj;
      this.meter = meter;
      long now = System.nanoTime();
      this.deadline = now + wall;
      // A single thread's CPU time cannot grow faster than the wall clock: with R ns of budget no
      // breach is possible for R ns, so the first tick comes then (1 ms at least, 20 at most).
      this.due = now + Math.max(MIN_TICK_NANOS, Math.min(cpuBudgetNanos, MAX_TICK_NANOS));
    }

    /**
     * Checks the unit at {@code now} and sets its next tick; false when it needs none (it ended, or
     * it was stopped).
     */
    private synchronized boolean check(long now) {
      if (ended || verdict != Verdict.NONE) {
        return false;
      }
      if (!guest.running()) {
        // Not started yet (it waits for a pool thread), or just ended: look again soon.
        due = now + MIN_TICK_NANOS;
        return true;
      }
      long cpu = guest.cpuSoFar();
      if (cpu > cpuBudgetNanos) {
        verdict = new Verdict(Outcome.Breach.CpuTime, false);
      } else if (Executor.totalUj(meter.current()) > energyBudgetUj) {
        verdict = new Verdict(Outcome.Breach.EnergyBudget, false);
      } else if (now - deadline > 0) {
        verdict = new Verdict(null, true);
      } else {
        due = now + Math.max(MIN_TICK_NANOS, Math.min(cpuBudgetNanos - cpu, MAX_TICK_NANOS));
        return true;
      }
      guest.stop();
      return false;
    }

    private synchronized Verdict end() {
      ended = true;
      return verdict;
    }

    private synchronized void stopIfRunning() {
      if (!ended) {
        guest.stop();
      }
    }
  }

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition tick = lock.newCondition();
  private final PriorityQueue<Watch> queue =
      new PriorityQueue<>((a, b) -> Long.compare(a.due - b.due, 0));
  private final String name;
  // Guarded by lock.
  private Thread thread;
  private boolean parked;
  // While parked: until a unit comes (no tick planned), or until plannedWake.
  private boolean parkedUntilWatched;
  private long plannedWake;
  private boolean closed;

  Watchdog(String name) {
    this.name = name;
  }

  /**
   * Starts watching {@code guest} against {@code cpuBudgetNanos}, {@code energyBudgetUj} (read from
   * {@code meter}) and {@code wallNanos} from now, until {@link #end}; null once closed (the unit
   * must not start: nothing would stop it).
   */
  Watch watch(
      Guest guest,
      long cpuBudgetNanos,
      long energyBudgetUj,
      EnergyModel.Session meter,
      long wallNanos) {
    Watch w = new Watch(guest, cpuBudgetNanos, energyBudgetUj, meter, wallNanos);
    lock.lock();
    try {
      if (closed) {
        return null;
      }
      if (thread == null) {
        thread = new Thread(this::loop, name);
        thread.setDaemon(true);
        thread.start();
      }
      queue.add(w);
      // Only a tick earlier than the one the thread waits for wakes it.
      if (parked && (parkedUntilWatched || w.due - plannedWake < 0)) {
        tick.signal();
      }
    } finally {
      lock.unlock();
    }
    return w;
  }

  /** Ends the watch of a unit that ended; returns what the watchdog found meanwhile. */
  Verdict end(Watch w) {
    Verdict v = w.end();
    lock.lock();
    try {
      queue.remove(w);
    } finally {
      lock.unlock();
    }
    return v;
  }

  /** Stops every unit still watched and the watchdog's thread; later watches stop at once. */
  @Override
  public void close() {
    List<Watch> left;
    lock.lock();
    try {
      closed = true;
      left = new ArrayList<>(queue);
      queue.clear();
      tick.signal();
    } finally {
      lock.unlock();
    }
    left.forEach(Watch::stopIfRunning);
  }

  private void loop() {
    List<Watch> due = new ArrayList<>();
    int idle = 0;
    lock.lock();
    try {
      while (!closed) {
        long now = System.nanoTime();
        for (Watch head = queue.peek(); head != null && head.due - now <= 0; head = queue.peek()) {
          due.add(queue.poll());
        }
        if (!due.isEmpty()) {
          idle = 0;
          lock.unlock();
          try {
            due.removeIf(w -> !w.check(now));
          } finally {
            lock.lock();
          }
          if (!closed) {
            queue.addAll(due);
          }
          due.clear();
          continue;
        }
        Watch head = queue.peek();
        parked = true;
        try {
          if (head != null) {
            idle = 0;
            plannedWake = head.due;
            tick.awaitNanos(head.due - now);
          } else if (idle++ < IDLE_TICKS) {
            plannedWake = now + MAX_TICK_NANOS;
            tick.awaitNanos(MAX_TICK_NANOS);
          } else {
            parkedUntilWatched = true;
            while (queue.isEmpty() && !closed) {
              tick.await();
            }
          }
        } catch (InterruptedException e) {
          return;
        } finally {
          parked = false;
          parkedUntilWatched = false;
        }
      }
    } finally {
      lock.unlock();
    }
  }
}
