package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code sandboxd serve} in a child JVM, as systemd starts it (Type=notify): READY=1 once the
 * socket exists, WATCHDOG=1 at half the interval while it answers its own probe, a STATUS= line
 * once the store verified in the background, and on SIGTERM STOPPING=1, a final STATUS= and exit 0.
 */
class ServeNotifiesSystemdTest {
  @TempDir Path tmp;

  @Test
  void serveSendsReadyThenStoppingOnSigterm() throws Exception {
    served(
        true,
        (daemon, received, socket) -> {
          String ready = received.poll(60, TimeUnit.SECONDS);
          assertNotNull(
              ready, "no READY=1; daemon log:\n" + Files.readString(tmp.resolve("daemon.log")));
          assertTrue(ready.startsWith("READY=1\nSTATUS=serving on " + socket), ready);
          assertTrue(Files.exists(socket), "READY=1 only after the socket is bound");

          int pings = 0;
          boolean verified = false;
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
          while ((pings < 2 || !verified) && System.nanoTime() < deadline) {
            String m = received.poll(5, TimeUnit.SECONDS);
            if ("WATCHDOG=1".equals(m)) {
              pings++;
            } else if (m != null && m.startsWith("STATUS=")) {
              assertTrue(m.contains("store verified (0 runs)"), m);
              verified = true;
            }
          }
          assertTrue(pings >= 2, "watchdog pings: " + pings);
          assertTrue(verified, "no STATUS= line for the store verification");

          daemon.destroy(); // SIGTERM, as systemctl stop sends
          String stopping = null;
          while (stopping == null || stopping.equals("WATCHDOG=1")) {
            stopping = received.poll(30, TimeUnit.SECONDS);
            assertNotNull(stopping, "no STOPPING=1");
          }
          assertTrue(stopping.startsWith("STOPPING=1\nSTATUS=stopping: not admitting"), stopping);
          String last = null;
          while (last == null || last.equals("WATCHDOG=1")) {
            last = received.poll(30, TimeUnit.SECONDS);
            assertNotNull(last, "no final STATUS=");
          }
          assertEquals("STATUS=stopped", last);
          assertTrue(daemon.waitFor(30, TimeUnit.SECONDS));
          assertEquals(0, daemon.exitValue(), "SIGTERM is an orderly stop: exit 0");
        });
  }

  @Test
  void exitWhenReadyIsADryStartThatStopsLikeSigterm() throws Exception {
    // build-start-cache trains the class-data archive on this: the whole start, then a clean stop.
    served(
        false,
        (daemon, received, socket) -> {
          assertTrue(
              daemon.waitFor(120, TimeUnit.SECONDS),
              "still running; log:\n" + Files.readString(tmp.resolve("daemon.log")));
          assertEquals(0, daemon.exitValue(), Files.readString(tmp.resolve("daemon.log")));
          // The datagrams were sent before it exited; the listener may still be handing them over.
          List<String> messages = new java.util.ArrayList<>();
          while (!messages.contains("STATUS=stopped")) {
            String m = received.poll(10, TimeUnit.SECONDS);
            assertNotNull(m, "no STATUS=stopped after " + messages);
            messages.add(m);
          }
          assertTrue(
              messages.get(0).startsWith("READY=1\nSTATUS=serving on " + socket), messages.get(0));
          assertTrue(
              messages.stream().anyMatch(m -> m.startsWith("STOPPING=1\n")), messages.toString());
          assertTrue(Files.exists(tmp.resolve("state/runs.db")), "the store was opened");
        },
        "--exit-when-ready");
  }

  /** What a test checks of a served daemon, the datagrams it sent and the socket it serves on. */
  private interface ServedCheck {
    void check(Process daemon, BlockingQueue<String> received, Path socket) throws Exception;
  }

  /**
   * Listens on a notify socket, serves (see {@link #serve}) and runs {@code check}; the daemon is
   * killed and the listener shut down whatever the check found.
   */
  private void served(boolean watchdog, ServedCheck check, String... options) throws Exception {
    BlockingQueue<String> received = new LinkedBlockingQueue<>();
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    Path notify = tmp.resolve("notify.sock");
    Path socket = tmp.resolve("sandboxd.sock");
    Process daemon = null;
    try {
      Channel server = SystemdNotifierTest.listen(group, notify.toString(), received);
      daemon = serve(notify, socket, watchdog, options);
      check.check(daemon, received, socket);
      server.close().sync();
    } finally {
      if (daemon != null) {
        daemon.destroyForcibly();
      }
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
  }

  /**
   * Starts {@code sandboxd serve} (with {@code options}) in a child JVM notifying {@code notify},
   * with a 1 s watchdog when {@code watchdog}; its output goes to daemon.log.
   */
  private Process serve(Path notify, Path socket, boolean watchdog, String... options)
      throws java.io.IOException {
    List<String> command =
        new java.util.ArrayList<>(
            List.of(
                ProcessHandle.current().info().command().orElse("java"),
                "-Djna.tmpdir=" + tmp.resolve("jna"),
                "-cp",
                System.getProperty("java.class.path"),
                SandboxdMain.class.getName(),
                "serve"));
    command.addAll(List.of(options));
    command.addAll(
        List.of("--state", tmp.resolve("state").toString(), "--socket", socket.toString()));
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.environment().put("NOTIFY_SOCKET", notify.toString());
    if (watchdog) {
      pb.environment().put("WATCHDOG_USEC", "1000000");
    }
    pb.redirectErrorStream(true).redirectOutput(tmp.resolve("daemon.log").toFile());
    return pb.start();
  }
}
