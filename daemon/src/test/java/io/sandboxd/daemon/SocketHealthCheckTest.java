package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.run.RunPathPrimer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The start-up primer's call through the daemon's own socket: a real daemon's primer makes it and
 * is answered, and the call leaves no thread or descriptor open, answered or failed.
 */
class SocketHealthCheckTest {
  @TempDir Path tmp;

  @Test
  void theDaemonsPrimerCallsThroughItsSocketAndACallLeavesNothingOpen() throws Exception {
    Logger primerLog = Logger.getLogger(RunPathPrimer.class.getName());
    StringBuffer lines = new StringBuffer();
    Handler h =
        new Handler() {
          @Override
          public void publish(LogRecord r) {
            lines.append(r.getMessage()).append('\n');
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        };
    primerLog.addHandler(h);
    DaemonPaths paths = DaemonPaths.resolve(false, tmp.resolve("state"), tmp.resolve("d.sock"));
    try (Daemon daemon = Daemon.start(paths, new Daemon.Settings(2, 10_000, 60_000, 16 << 20))) {
      daemon.awaitPrimed(Duration.ofSeconds(60));
      assertTrue(lines.toString().contains("run path primed in "), lines.toString());
      assertTrue(
          lines.toString().contains("nothing stored; connection path warmed in "),
          lines.toString());
      assertTrue(lines.toString().contains(" answered SERVING)"), lines.toString());

      // The server's second event loop starts on the next connection, and stays: one call first.
      assertEquals("SERVING", SocketHealthCheck.once(paths.socket(), Duration.ofSeconds(3)));
      Set<Thread> threads = threads();
      long fds = openFds();
      assertEquals("SERVING", SocketHealthCheck.once(paths.socket(), Duration.ofSeconds(3)));
      awaitNothingOpenBeyond(threads, fds);
    } finally {
      primerLog.removeHandler(h);
    }
  }

  @Test
  void anAbsentSocketFailsTheCallAndLeavesNoThread() throws Exception {
    Set<Thread> threads = threads();
    long fds = openFds();
    StatusRuntimeException e =
        assertThrows(
            StatusRuntimeException.class,
            () -> SocketHealthCheck.once(tmp.resolve("absent.sock"), Duration.ofSeconds(3)));
    assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
    awaitNothingOpenBeyond(threads, fds);
  }

  /**
   * Waits up to 10 s until every thread alive is one of {@code threads} and no more descriptors are
   * open than {@code fds} (the server closes its side of a connection after the client has).
   */
  private static void awaitNothingOpenBeyond(Set<Thread> threads, long fds) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      Set<Thread> added = threads();
      added.removeAll(threads);
      long open = openFds();
      if (added.isEmpty() && open <= fds) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError(
            "left open: threads " + added + ", " + open + " descriptors against " + fds);
      }
      Thread.sleep(50);
    }
  }

  private static Set<Thread> threads() {
    Set<Thread> alive = new HashSet<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.isAlive()) {
        alive.add(t);
      }
    }
    return alive;
  }

  private static long openFds() throws Exception {
    try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
      return fds.count();
    }
  }
}
