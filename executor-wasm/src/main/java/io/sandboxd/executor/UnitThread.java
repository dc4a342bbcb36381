package io.sandboxd.executor;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A platform thread with a unit's stack, on which {@link Executor} runs a unit in place: a caller
 * on one (the daemon's handler threads) runs its unit itself instead of handing it to a pool thread
 * and waiting, so a run costs no thread hand-off there and back.
 */
public final class UnitThread extends Thread {
  /** The stack a unit's thread gets: deep guest recursion needs more than the JVM's default. */
  static final long STACK_BYTES = 8L * 1024 * 1024;

  private UnitThread(Runnable task, String name) {
    super(null, task, name, STACK_BYTES);
    setDaemon(true);
  }

  /** Daemon unit threads named {@code prefix1}, {@code prefix2}, ... */
  public static ThreadFactory factory(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return task -> new UnitThread(task, prefix + n.incrementAndGet());
  }

  /** Whether the calling thread is one: {@link Executor} then runs a unit on it in place. */
  static boolean current() {
    return Thread.currentThread() instanceof UnitThread;
  }
}
