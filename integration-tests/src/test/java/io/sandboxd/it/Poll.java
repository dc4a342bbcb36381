package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** Polling against a deadline: how the integration tests wait for a daemon to get somewhere. */
final class Poll {
  private Poll() {}

  /** A condition asked until it holds. */
  interface Condition {
    boolean holds() throws Exception;
  }

  /** A count asked until it falls to a bound. */
  interface Count {
    int now() throws Exception;
  }

  /** Whether {@code condition} held within {@code seconds}, asked every {@code everyMs}. */
  static boolean within(int seconds, long everyMs, Condition condition) throws Exception {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (System.nanoTime() < end) {
      if (condition.holds()) {
        return true;
      }
      Thread.sleep(everyMs);
    }
    return false;
  }

  /**
   * Waits up to {@code seconds} for {@code condition}, asked every 200 ms; else fails with {@code
   * log}.
   */
  static void until(int seconds, Path log, Condition condition) throws Exception {
    if (!within(seconds, 200, condition)) {
      fail("not within " + seconds + " s; " + log.getFileName() + ":\n" + Files.readString(log));
    }
  }

  /**
   * {@code count} once it is at most {@code bound}, or after {@code seconds}: asked every 250 ms.
   */
  static int settle(Count count, int bound, int seconds) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    int n = count.now();
    while (n > bound && System.nanoTime() < deadline) {
      Thread.sleep(250);
      n = count.now();
    }
    return n;
  }

  /** How many entries {@code dir} holds: a process's threads in /proc/PID/task, its fds in fd. */
  static int entries(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return (int) s.count();
    }
  }
}
