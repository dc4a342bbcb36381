package io.sandboxd.daemon;

import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.protobuf.services.HealthStatusManager;
import io.sandboxd.daemon.rpc.SandboxdGrpc;
import io.sandboxd.daemon.run.DrainingException;

/**
 * Whether the daemon admits submissions, and how many are in flight. It admits from {@link
 * #serving()} until {@link #drain} (SIGTERM); draining, a new submission is refused UNAVAILABLE and
 * the gRPC health service says NOT_SERVING, while the submissions already admitted run to their
 * end.
 */
public final class ServingState {
  /** The health service name of the daemon's own API, besides the server-wide "". */
  static final String SERVICE = SandboxdGrpc.SERVICE_NAME;

  private final HealthStatusManager health = new HealthStatusManager();
  private final Object lock = new Object();
  private int inFlight;
  // System.nanoTime() when the last submission in flight ended, or serving began.
  private long quietSince = System.nanoTime();
  private boolean draining;

  public ServingState() {
    health.setStatus("", ServingStatus.NOT_SERVING);
    health.setStatus(SERVICE, ServingStatus.NOT_SERVING);
  }

  HealthStatusManager health() {
    return health;
  }

  /** The store verified at start and the key loaded: SERVING. */
  void serving() {
    synchronized (lock) {
      if (draining) {
        return;
      }
      // The quiet spell starts now: clients could not reach the node before, and the first ones
      // should not find the store verifier taking the idle share of a core.
      quietSince = System.nanoTime();
    }
    health.setStatus("", ServingStatus.SERVING);
    health.setStatus(SERVICE, ServingStatus.SERVING);
  }

  /** Admits one submission, or throws {@link DrainingException}; pair with {@link #exit}. */
  public void enter() {
    synchronized (lock) {
      if (draining) {
        throw new DrainingException(
            "sandboxd is stopping (draining its running units): not admitting new submissions;"
                + " retry once it is back, or on another node");
      }
      inFlight++;
    }
  }

  public void exit() {
    synchronized (lock) {
      if (--inFlight == 0) {
        quietSince = System.nanoTime();
      }
      lock.notifyAll();
    }
  }

  /**
   * Whether no submission has been in flight for {@code ms} or more: the node is idle, and
   * background work may use the CPU that runs would otherwise wait for.
   */
  public boolean idleFor(long ms) {
    synchronized (lock) {
      return inFlight == 0 && System.nanoTime() - quietSince >= ms * 1_000_000L;
    }
  }

  public int inFlight() {
    synchronized (lock) {
      return inFlight;
    }
  }

  public boolean draining() {
    synchronized (lock) {
      return draining;
    }
  }

  /**
   * Stops admitting and waits up to {@code deadlineMs} for the submissions in flight to finish;
   * returns how many had not.
   */
  int drain(long deadlineMs) throws InterruptedException {
    synchronized (lock) {
      draining = true;
    }
    health.setStatus("", ServingStatus.NOT_SERVING);
    health.setStatus(SERVICE, ServingStatus.NOT_SERVING);
    long end = System.nanoTime() + deadlineMs * 1_000_000L;
    synchronized (lock) {
      while (inFlight > 0) {
        long left = (end - System.nanoTime()) / 1_000_000L;
        if (left <= 0) {
          break;
        }
        lock.wait(left);
      }
      return inFlight;
    }
  }
}
