package io.sandboxd.daemon.run;

/** The caller already has as many runs in flight as its policy rule allows (retry later). */
public final class PolicyLimitException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public PolicyLimitException(String message) {
    super(message);
  }
}
