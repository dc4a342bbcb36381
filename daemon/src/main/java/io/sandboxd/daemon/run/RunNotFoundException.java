package io.sandboxd.daemon.run;

/** A request named a run this node does not hold. */
public final class RunNotFoundException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public RunNotFoundException(String runId) {
    super("run_id: no run \"" + runId + "\" on this node");
  }
}
