package io.sandboxd.executor;

/** The node has no room for another unit now (too many wait for a thread); try again later. */
public final class ExecutorBusyException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public ExecutorBusyException(String message, Throwable cause) {
    super(message, cause);
  }
}
