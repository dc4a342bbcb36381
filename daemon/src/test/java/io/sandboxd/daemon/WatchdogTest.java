package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Which watchdog interval systemd asked this process for. */
class WatchdogTest {
  @Test
  void intervalComesFromWatchdogUsecForThisPid() {
    assertEquals(
        Optional.of(Duration.ofSeconds(30)),
        Watchdog.interval(Map.of("WATCHDOG_USEC", "30000000"), 42));
    assertEquals(
        Optional.of(Duration.ofMillis(500)),
        Watchdog.interval(Map.of("WATCHDOG_USEC", "500000", "WATCHDOG_PID", "42"), 42));
    // Meant for another process (a child that inherited the environment): not ours to ping.
    assertEquals(
        Optional.empty(),
        Watchdog.interval(Map.of("WATCHDOG_USEC", "500000", "WATCHDOG_PID", "7"), 42));
    assertEquals(Optional.empty(), Watchdog.interval(Map.of(), 42));
    assertEquals(Optional.empty(), Watchdog.interval(Map.of("WATCHDOG_USEC", "0"), 42));
    assertEquals(Optional.empty(), Watchdog.interval(Map.of("WATCHDOG_USEC", "soon"), 42));
  }
}
