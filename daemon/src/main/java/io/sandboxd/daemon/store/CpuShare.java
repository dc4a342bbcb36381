package io.sandboxd.daemon.store;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Holds background work to a share of one core: between units of work, the worker sleeps until its
 * CPU time is at most that share of the wall time since it began. Its totals over all sessions are
 * kept for the metric that shows the cap holds.
 */
public final class CpuShare {
  /** Sleeps shorter than this are put off until the debt is larger (fewer, longer pauses). */
  private static final long MIN_SLEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

  /** How often a pacing sleep looks whether to give way (an on-demand check waits no longer). */
  private static final long GIVE_WAY_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  private final int percent;
  private long cpuNanos;
  private long wallNanos;

  /** A share of {@code percent} of one core (100: no cap). */
  public CpuShare(int percent) {
    if (percent < 1 || percent > 100) {
      throw new IllegalArgumentException("a CPU share is 1..100 percent: " + percent);
    }
    this.percent = percent;
  }

  /** CPU and wall time of the sessions so far (ns). */
  public record Use(long cpuNanos, long wallNanos) {
    /** CPU as a percentage of one core over the wall time (0 before any work). */
    public double percentOfOneCore() {
      return wallNanos == 0 ? 0 : 100.0 * cpuNanos / wallNanos;
    }
  }

  public synchronized Use use() {
    return new Use(cpuNanos, wallNanos);
  }

  /** Starts a paced session on the calling thread. */
  public Session begin() {
    return new Session();
  }

  /** One thread's paced stretch of work. */
  public final class Session implements AutoCloseable {
    private final long cpu0 = THREADS.getCurrentThreadCpuTime();
    private final long wall0 = System.nanoTime();

    /** Sleeps as long as the CPU used so far exceeds the share of the wall time. */
    public void pace() throws InterruptedException {
      pace(() -> false);
    }

    /**
     * As {@link #pace()}, but looks at {@code giveWay} every {@link #GIVE_WAY_NANOS} of the sleep
     * and ends it early once it holds; returns false then (the work should stop), else true.
     */
    public boolean pace(BooleanSupplier giveWay) throws InterruptedException {
      if (percent >= 100) {
        return !giveWay.getAsBoolean();
      }
      long cpu = THREADS.getCurrentThreadCpuTime() - cpu0;
      long due = cpu * 100 / percent - (System.nanoTime() - wall0);
      if (due < MIN_SLEEP_NANOS) {
        return !giveWay.getAsBoolean();
      }
      long until = System.nanoTime() + due;
      for (long left = due; left > 0; left = until - System.nanoTime()) {
        if (giveWay.getAsBoolean()) {
          return false;
        }
        TimeUnit.NANOSECONDS.sleep(Math.min(left, GIVE_WAY_NANOS));
      }
      return !giveWay.getAsBoolean();
    }

    @Override
    public void close() {
      long cpu = THREADS.getCurrentThreadCpuTime() - cpu0;
      long wall = System.nanoTime() - wall0;
      synchronized (CpuShare.this) {
        cpuNanos += cpu;
        wallNanos += wall;
      }
    }
  }
}
