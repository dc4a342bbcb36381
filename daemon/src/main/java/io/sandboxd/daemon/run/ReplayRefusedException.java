package io.sandboxd.daemon.run;

/** A stored run that cannot be replayed as it stands: pruned, recorded without grants, refused. */
public final class ReplayRefusedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public ReplayRefusedException(String message) {
    super(message);
  }

  public ReplayRefusedException(String message, Throwable cause) {
    super(message, cause);
  }
}
