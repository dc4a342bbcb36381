package io.sandboxd.executor;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A platform thread with a unit's stack, on which {@link Executor} may run a unit in place: a
 * caller on one (the daemon's handler threads) that holds one of the executor's {@link
 * InPlaceSeats} runs its unit itself instead of handing it to a pool thread and waiting, so a run
 * costs no thread hand-off there and back.
 */
public final class UnitThread extends Thread {
  /** The stack a unit's thread gets: deep guest recursion needs more than the JVM's default. */
  static final long STACK_BYTES = 8L * 1024 * 1024;

  // The seats this thread holds one of, once it ran a unit in place; only this thread reads or
  // writes it.
  private InPlaceSeats seated;

  private UnitThread(Runnable task, String name) {
    super(null, task, name, STACK_BYTES);
    setDaemon(true);
  }

  @Override
  public void run() {
    try {
      super.run();
    } finally {
      // Its stack goes with it: another thread may run units in place.
      if (seated != null) {
        seated.leave();
      }
    }
  }

  /** Daemon unit threads named {@code prefix1}, {@code prefix2}, ... */
  public static ThreadFactory factory(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return task -> new UnitThread(task, prefix + n.incrementAndGet());
  }

  /**
   * Whether the calling thread may run a unit of the executor whose seats are {@code seats} in
   * place: it is a unit thread, and holds one of them or takes a free one (a thread holds at most
   * one seat, of one executor).
   */
  static boolean seatedIn(InPlaceSeats seats) {
    if (!(Thread.currentThread() instanceof UnitThread)) {
      return false;
    }
    UnitThread self = (UnitThread) Thread.currentThread();
    if (self.seated == null && seats.tryTake()) {
      self.seated = seats;
    }
    return self.seated == seats;
  }
}
