package io.sandboxd.daemon;

import java.time.Duration;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * When a failure that repeats is due to be reported: its first time, then once a period with how
 * many were held back. For failures whose rate a client, a unit or a full disk decides, which would
 * otherwise fill the log (and the disk under it) at the rate they come.
 */
public final class ReportPace {
  /** How often a failure that repeats (a broker down, a store out of room) is reported. */
  public static final Duration EVERY = Duration.ofSeconds(30);

  private final long everyNanos;
  private boolean reported;
  private long reportedAt;
  private long held;

  public ReportPace() {
    this.everyNanos = EVERY.toNanos();
  }

  /**
   * -1 when this failure is held back; else it is due, and the answer is how many were held back
   * since the last report.
   */
  public synchronized long due(long nowNanos) {
    if (reported && nowNanos - reportedAt < everyNanos) {
      held++;
      return -1;
    }
    long before = held;
    reported = true;
    reportedAt = nowNanos;
    held = 0;
    return before;
  }

  /**
   * Logs {@code message} at {@code level} (with {@code thrown}, when not null) if this failure is
   * due, saying how many were held back since the last report.
   */
  public void log(Logger log, Level level, String message, Throwable thrown) {
    long held = due(System.nanoTime());
    if (held >= 0) {
      log.log(
          level,
          held > 0 ? message + " (and " + held + " more since the last report)" : message,
          thrown);
    }
  }
}
