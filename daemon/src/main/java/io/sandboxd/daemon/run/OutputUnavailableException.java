package io.sandboxd.daemon.run;

/** A run's stdout or stderr cannot be given: the unit had no stdio, or retention pruned it. */
public final class OutputUnavailableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public OutputUnavailableException(String message) {
    super(message);
  }
}
