package io.sandboxd.enforcer;

/** Whether a host accepts a grant set before any execution: accepted at a tier, or declined. */
public sealed interface Acceptance permits Acceptance.Accepted, Acceptance.Declined {

  /** The run may start at {@code tier}. */
  record Accepted(Tier tier) implements Acceptance {}

  /** The run is declined and nothing executes. */
  record Declined(String reason) implements Acceptance {}
}
