package io.sandboxd.daemon.store;

/** A node-log or fleet query the client got wrong (a size, address or aggregate): names it. */
public final class LogInputException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public LogInputException(String message) {
    super(message);
  }
}
