package io.sandboxd.daemon.store;

/** A stored run does not match the node's signed records; its values must not be served. */
public final class TamperedRunException extends StoreException {
  private static final long serialVersionUID = 1L;

  public TamperedRunException(String runId, String why) {
    super("run " + runId + ": the run store does not match its signed records (" + why + ")");
  }
}
