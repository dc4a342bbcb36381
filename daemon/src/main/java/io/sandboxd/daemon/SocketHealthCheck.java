package io.sandboxd.daemon;

import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** One health check through the daemon's own socket, on a connection of its own. */
final class SocketHealthCheck {
  private SocketHealthCheck() {}

  /**
   * Asks the health service on {@code socket} once, within {@code deadline}, and returns the status
   * it answered (what the call failed with is thrown). The channel and its event loop are its own
   * and are closed before it returns: nothing of it stays open, and it holds none of the socket's
   * connection slots afterwards (the watchdog's long-lived client would).
   */
  static String once(Path socket, Duration deadline) {
    try (DaemonClient c = new DaemonClient(socket)) {
      return HealthGrpc.newBlockingStub(c.channel())
          .withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS)
          .check(HealthCheckRequest.getDefaultInstance())
          .getStatus()
          .name();
    }
  }
}
