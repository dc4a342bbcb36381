package io.sandboxd.daemon.store;

/**
 * What start-up verification found wrong in the run store: the run (or {@code "store"} for the
 * signed head), the column or record kind at fault, and why.
 */
public record StoreDamage(String runId, String column, String reason) {
  /** Damage to the store as a whole (its signed head, its run count), not to one run. */
  static final String STORE = "store";

  @Override
  public String toString() {
    return (runId.equals(STORE) ? "store" : "run " + runId) + ", " + column + ": " + reason;
  }
}
