package io.sandboxd.daemon.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.SigningKey;
import io.sandboxd.config.ConfigException;
import io.sandboxd.config.DaemonConfig;
import io.sandboxd.daemon.Daemon;
import io.sandboxd.daemon.DaemonPaths;
import io.sandboxd.daemon.LogCapture;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node's shipping lives as long as its daemon: a close stops a start that is still waiting for
 * its brokers (refused, or a server that never answers), and closes what a start opened, even when
 * the start finishes just as the close comes. The client's failures reach the log at a pace, not
 * once per try.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FleetShippingTest {
  @TempDir Path tmp;

  /** A local port with nothing listening on it: every connect is refused at once. */
  private static int refusedPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** A closeable that says whether it was closed. */
  private static final class Opened implements AutoCloseable {
    final AtomicBoolean closed = new AtomicBoolean();

    @Override
    public void close() {
      closed.set(true);
    }
  }

  private static void awaitStarted(FleetShipping s) throws InterruptedException {
    while (s.starting()) {
      Thread.sleep(5);
    }
  }

  @Test
  void aCloseWhileTheBrokerRefusesEndsTheWait() throws Exception {
    String url = "nats://127.0.0.1:" + refusedPort();
    CountDownLatch refused = new CountDownLatch(1);
    FleetShipping s =
        FleetShipping.start(
            stop -> FleetStreams.connect(url, "test", stop, e -> refused.countDown()), url);
    assertTrue(refused.await(30, TimeUnit.SECONDS), "the refusal was reported");
    assertTrue(s.starting(), "a refused start keeps trying");
    s.close();
    assertFalse(s.starting(), "the close ended the wait");
  }

  @Test
  void aCloseWhileAServerNeverAnswersEndsTheWait() throws Exception {
    // Accepts the connection and says nothing: the client waits for the server's greeting.
    try (ServerSocket silent = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
      List<Socket> held = new ArrayList<>();
      CountDownLatch accepted = new CountDownLatch(1);
      Thread acceptor =
          new Thread(
              () -> {
                try {
                  while (true) {
                    held.add(silent.accept());
                    accepted.countDown();
                  }
                } catch (IOException closed) {
                  // the test is over
                }
              });
      acceptor.start();
      String url = "nats://127.0.0.1:" + silent.getLocalPort();
      FleetShipping s =
          FleetShipping.start(stop -> FleetStreams.connect(url, "test", stop, e -> {}), url);
      assertTrue(accepted.await(30, TimeUnit.SECONDS), "the client connected");
      s.close();
      assertFalse(s.starting(), "the close ended the connect in progress");
      silent.close();
      acceptor.join();
      for (Socket h : held) {
        h.close();
      }
    }
  }

  @Test
  void whatAStartOpenedIsClosedByTheClose() throws Exception {
    Opened opened = new Opened();
    FleetShipping s = FleetShipping.start(stop -> opened, "here");
    awaitStarted(s);
    assertFalse(opened.closed.get(), "running until the close");
    s.close();
    assertTrue(opened.closed.get());
  }

  @Test
  void aStartThatFinishesAsTheCloseComesIsClosedToo() throws Exception {
    Opened opened = new Opened();
    CountDownLatch waiting = new CountDownLatch(1);
    FleetShipping s =
        FleetShipping.start(
            stop -> {
              waiting.countDown();
              // A start that does not hear the interrupt and sees the stop only once it is done.
              while (!stop.getAsBoolean()) {
                try {
                  Thread.sleep(1);
                } catch (InterruptedException ignored) {
                  // keeps going: some connects do not end on an interrupt
                }
              }
              return opened;
            },
            "here");
    assertTrue(waiting.await(30, TimeUnit.SECONDS));
    s.close();
    assertFalse(s.starting());
    assertTrue(opened.closed.get(), "closed by the start itself, as the close had come");
  }

  @Test
  void aStartThatFailsLeavesNothingToClose() throws Exception {
    FleetShipping s =
        FleetShipping.start(
            stop -> {
              throw new IOException("no such host");
            },
            "here");
    awaitStarted(s);
    s.close();
    FleetShipping.NONE.close();
    assertFalse(FleetShipping.NONE.starting());
  }

  private static DaemonConfig fleetConfig(int port, String aggregatorKey) {
    String json =
        "{\"fleet\":{\"nats\":\"nats://127.0.0.1:"
            + port
            + "\",\"aggregator_key\":\""
            + aggregatorKey
            + "\"}}";
    return DaemonConfig.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void aDaemonClosedWhileItsFleetWaitsLeavesNoFleetThread() throws Exception {
    DaemonPaths paths = DaemonPaths.resolve(false, tmp.resolve("state"), tmp.resolve("d.sock"));
    Daemon daemon =
        Daemon.start(paths, fleetConfig(refusedPort(), SigningKey.generate().publicKey().hex()));
    try {
      Thread.sleep(500);
      assertTrue(fleetStartAlive(), "the daemon's fleet still waits for its broker");
    } finally {
      daemon.close();
    }
    assertFalse(fleetStartAlive(), "the daemon's close stopped its fleet start");
  }

  @Test
  void aDaemonWhoseAggregatorKeyIsNoKeyDoesNotStart() throws Exception {
    // 64 lowercase hex, as the configuration checks, and not a point on the curve.
    String notAKey = "ab".repeat(32);
    DaemonPaths paths = DaemonPaths.resolve(false, tmp.resolve("state"), tmp.resolve("d.sock"));
    ConfigException e =
        assertThrows(ConfigException.class, () -> Daemon.start(paths, fleetConfig(1, notAKey)));
    assertTrue(e.getMessage().startsWith("$.fleet.aggregator_key: "), e.getMessage());
    assertFalse(Files.exists(tmp.resolve("state")), "refused before anything was created");
  }

  private static boolean fleetStartAlive() {
    return Thread.getAllStackTraces().keySet().stream()
        .anyMatch(t -> t.getName().equals("fleet-start") && t.isAlive());
  }

  @Test
  void theClientsFailuresReachTheLogAtAPace() {
    List<LogRecord> records;
    try (LogCapture captured = LogCapture.of(FleetStreams.class.getName())) {
      FleetStreams.PacedErrors errors = new FleetStreams.PacedErrors("node-1");
      for (int i = 0; i < 100; i++) {
        errors.exceptionOccurred(null, new IOException("Connection refused"));
        errors.errorOccurred(null, "Authorization Violation");
      }
      records = captured.records();
    }
    assertEquals(2, records.size(), "one line for each kind, not one per try");
    assertTrue(records.get(0).getMessage().contains("node-1"), records.get(0).getMessage());
    assertTrue(records.get(0).getMessage().contains("Connection refused"));
    assertTrue(records.get(1).getMessage().contains("Authorization Violation"));
  }
}
