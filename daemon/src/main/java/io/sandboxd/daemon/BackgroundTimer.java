package io.sandboxd.daemon;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/** A one-thread timer for the daemon's periodic work; its daemon thread never holds up an exit. */
public final class BackgroundTimer {
  private BackgroundTimer() {}

  /** A scheduled executor whose one daemon thread is named {@code thread} (as jstack shows it). */
  public static ScheduledExecutorService named(String thread) {
    return Executors.newSingleThreadScheduledExecutor(
        r -> {
          Thread t = new Thread(r, thread);
          t.setDaemon(true);
          return t;
        });
  }
}
