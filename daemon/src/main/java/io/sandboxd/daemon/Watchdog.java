package io.sandboxd.daemon;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.logging.Logger;

/**
 * systemd's watchdog ({@code WatchdogSec=}): every half interval it asks whether the daemon really
 * serves (a probe through its own socket and store) and only then sends {@code WATCHDOG=1}; a
 * daemon that stops answering misses its pings and systemd restarts it.
 */
final class Watchdog implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(Watchdog.class.getName());

  private final ScheduledExecutorService timer;

  private Watchdog(ScheduledExecutorService timer) {
    this.timer = timer;
  }

  /**
   * The interval systemd asked for: {@code WATCHDOG_USEC}, when set, positive, and meant for this
   * process ({@code WATCHDOG_PID} unset or ours).
   */
  static Optional<Duration> interval(Map<String, String> env, long pid) {
    String usec = env.get("WATCHDOG_USEC");
    if (usec == null || usec.isEmpty()) {
      return Optional.empty();
    }
    String forPid = env.get("WATCHDOG_PID");
    if (forPid != null && !forPid.isEmpty() && !forPid.equals(Long.toString(pid))) {
      return Optional.empty();
    }
    try {
      long us = Long.parseLong(usec);
      return us > 0 ? Optional.of(Duration.ofNanos(us * 1000)) : Optional.empty();
    } catch (NumberFormatException e) {
      LOG.warning("WATCHDOG_USEC=" + usec + " is not a number; no watchdog pings");
      return Optional.empty();
    }
  }

  /** Pings every half {@code interval} while {@code alive} says so. */
  static Watchdog start(SystemdNotifier systemd, Duration interval, BooleanSupplier alive) {
    ScheduledExecutorService timer = BackgroundTimer.named("sandboxd-watchdog");
    long half = Math.max(1, interval.toMillis() / 2);
    timer.scheduleWithFixedDelay(
        () -> {
          if (alive.getAsBoolean()) {
            systemd.notify("WATCHDOG=1");
          } else {
            LOG.warning("watchdog: the daemon does not answer its own probe; not pinging systemd");
          }
        },
        0,
        half,
        TimeUnit.MILLISECONDS);
    LOG.info("watchdog: pinging systemd every " + half + " ms while the daemon answers");
    return new Watchdog(timer);
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
