package io.sandboxd.daemon.run;

/** An environment the configuration offers cannot be offered: the start stops, naming why. */
public final class EnvironmentRefusedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public EnvironmentRefusedException(String message, Throwable cause) {
    super(message, cause);
  }
}
