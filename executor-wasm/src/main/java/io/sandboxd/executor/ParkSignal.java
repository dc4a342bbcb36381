package io.sandboxd.executor;

import io.sandboxd.enforcer.Attenuation;
import io.sandboxd.enforcer.Enforcer;
import io.sandboxd.enforcer.Grants;
import java.util.Optional;

/**
 * A request to park one run at its next boundary (ABI.md "Parking and resuming"): {@code
 * yield_point} then answers {@code PARK}, and a {@code step} unit is not called again. Set by the
 * supervisor (a client's suspend, shutdown, a node cap); read by the run's host functions and
 * executor on the guest thread. It also carries the supervisor's other hold on a live run: an
 * accepted amendment (WIRE.md §2.11) reaches the run's {@link Enforcer} through it, so the tighter
 * grant decides every host call after the swap.
 */
public final class ParkSignal {
  private volatile boolean requested;
  private Enforcer enforcer;
  private Grants amended;

  /** Asks the run to park at its next boundary; idempotent. */
  public void request() {
    requested = true;
  }

  /** Whether a park was requested. */
  public boolean requested() {
    return requested;
  }

  /**
   * Binds the run's Enforcer (once the executor built it); an amendment made before applies now.
   */
  synchronized void attach(Enforcer e) {
    enforcer = e;
    if (amended != null) {
      e.tighten(amended);
    }
  }

  /**
   * Holds the live run to {@code newGrants} from its next host call on.
   *
   * @throws IllegalArgumentException if {@code newGrants} is wider than the grants in force
   */
  public synchronized void tighten(Grants newGrants) {
    if (enforcer != null) {
      enforcer.tighten(newGrants);
    } else if (amended != null
        && Attenuation.check(newGrants, amended) instanceof Attenuation.Wider w) {
      throw new IllegalArgumentException("an amendment may only tighten: " + w);
    }
    amended = newGrants;
  }

  /** The grants an amendment put in force, if one did. */
  public synchronized Optional<Grants> amended() {
    return Optional.ofNullable(amended);
  }
}
