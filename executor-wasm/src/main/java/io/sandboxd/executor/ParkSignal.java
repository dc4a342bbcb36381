package io.sandboxd.executor;

/**
 * A request to park one run at its next boundary (ABI.md "Parking and resuming"): {@code
 * yield_point} then answers {@code PARK}, and a {@code step} unit is not called again. Set by the
 * supervisor (a client's suspend, shutdown, a node cap); read by the run's host functions and
 * executor on the guest thread.
 */
public final class ParkSignal {
  private volatile boolean requested;

  /** Asks the run to park at its next boundary; idempotent. */
  public void request() {
    requested = true;
  }

  /** Whether a park was requested. */
  public boolean requested() {
    return requested;
  }
}
