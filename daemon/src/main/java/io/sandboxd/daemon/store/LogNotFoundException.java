package io.sandboxd.daemon.store;

/** A record or run a node-log or fleet query names is not in the log. */
public final class LogNotFoundException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public LogNotFoundException(String message) {
    super(message);
  }
}
