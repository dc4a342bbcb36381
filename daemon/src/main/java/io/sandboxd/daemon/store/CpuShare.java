package io.sandboxd.daemon.store;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Holds background work to a share of one core: between units of work, the worker sleeps until its
 * CPU time is at most that share of the wall time since it began. While the node is idle (no run
 * waiting for the CPU) a larger share may hold instead, so that work a busy spell left behind is
 * done before it is needed. Its totals are kept for the metric that shows the cap holds.
 */
public final class CpuShare {
  /** Sleeps shorter than this are put off until the debt is larger (fewer, longer pauses). */
  private static final long MIN_SLEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

  /** How often a pacing sleep looks whether to give way (an on-demand check waits no longer). */
  private static final long GIVE_WAY_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  private final int percent;
  private final int idlePercent;
  private final BooleanSupplier idle;
  private long cpuNanos;
  private long wallNanos;
  private long idleCpuNanos;
  private long idleWallNanos;

  /** A share of {@code percent} of one core (100: no cap). */
  public CpuShare(int percent) {
    this(percent, percent, () -> false);
  }

  /**
   * A share of {@code percent} of one core, and of {@code idlePercent} (at least as much) while
   * {@code idle} says that nothing else waits for the CPU.
   */
  public CpuShare(int percent, int idlePercent, BooleanSupplier idle) {
    for (int p : new int[] {percent, idlePercent}) {
      if (p < 1 || p > 100) {
        throw new IllegalArgumentException("a CPU share is 1..100 percent: " + p);
      }
    }
    if (idlePercent < percent) {
      throw new IllegalArgumentException(
          "the idle share " + idlePercent + "% is below the share " + percent + "%");
    }
    this.percent = percent;
    this.idlePercent = idlePercent;
    this.idle = idle;
  }

  /**
   * CPU and wall time of the sessions so far (ns): under the share ({@code cpuNanos}, {@code
   * wallNanos}) and while the node was idle, under the idle share.
   */
  public record Use(long cpuNanos, long wallNanos, long idleCpuNanos, long idleWallNanos) {
    /** CPU under the share as a percentage of one core over its wall time (0 before any work). */
    public double percentOfOneCore() {
      return wallNanos == 0 ? 0 : 100.0 * cpuNanos / wallNanos;
    }
  }

  public synchronized Use use() {
    return new Use(cpuNanos, wallNanos, idleCpuNanos, idleWallNanos);
  }

  /** Starts a paced session on the calling thread. */
  public Session begin() {
    return new Session();
  }

  /** Whether the idle share holds now (the node is idle and that share is larger). */
  private boolean idleNow() {
    return idlePercent > percent && idle.getAsBoolean();
  }

  /**
   * One thread's paced stretch of work. It is held to the share in force: a change between busy and
   * idle starts a new stretch, so a debt run up while idle is not slept off once runs come back
   * (they would wait for nothing) and work done while busy is not excused by a later lull.
   */
  public final class Session implements AutoCloseable {
    private long cpu0 = THREADS.getCurrentThreadCpuTime();
    private long wall0 = System.nanoTime();
    private boolean idleStretch = idleNow();

    /** Sleeps as long as the CPU used so far exceeds the share of the wall time. */
    public void pace() throws InterruptedException {
      pace(() -> false);
    }

    /**
     * As {@link #pace()}, but looks at {@code giveWay} every {@link #GIVE_WAY_NANOS} of the sleep
     * and ends it early once it holds; returns false then (the work should stop), else true. A
     * sleep also ends early when the node turns idle and the idle share is larger.
     */
    public boolean pace(BooleanSupplier giveWay) throws InterruptedException {
      boolean idleNow = idleNow();
      if (idleNow != idleStretch) {
        settle();
        idleStretch = idleNow;
      }
      int share = idleStretch ? idlePercent : percent;
      if (share >= 100) {
        return !giveWay.getAsBoolean();
      }
      long due = debt(share);
      if (due < MIN_SLEEP_NANOS) {
        return !giveWay.getAsBoolean();
      }
      // The debt is reckoned again after each step of the sleep, so that the CPU the waking up
      // costs (a millisecond or so over a long sleep) is slept off too and the share holds.
      for (; due > 0; due = debt(share)) {
        if (giveWay.getAsBoolean()) {
          return false;
        }
        if (!idleStretch && idleNow()) {
          // Nothing waits for the CPU any more: the rest of the debt need not be slept off.
          return !giveWay.getAsBoolean();
        }
        TimeUnit.NANOSECONDS.sleep(Math.min(due, GIVE_WAY_NANOS));
      }
      return !giveWay.getAsBoolean();
    }

    /** How long the stretch must sleep for its CPU to be {@code share}% of its wall time (ns). */
    private long debt(int share) {
      long cpu = THREADS.getCurrentThreadCpuTime() - cpu0;
      return cpu * 100 / share - (System.nanoTime() - wall0);
    }

    /** Adds the stretch so far to the totals of the share it was held to, and starts another. */
    private void settle() {
      long cpu = THREADS.getCurrentThreadCpuTime();
      long wall = System.nanoTime();
      synchronized (CpuShare.this) {
        if (idleStretch) {
          idleCpuNanos += cpu - cpu0;
          idleWallNanos += wall - wall0;
        } else {
          cpuNanos += cpu - cpu0;
          wallNanos += wall - wall0;
        }
      }
      cpu0 = cpu;
      wall0 = wall;
    }

    @Override
    public void close() {
      settle();
    }
  }
}
