package io.sandboxd.daemon.run;

/** A submission named an environment this node does not offer. */
public final class EnvironmentNotOfferedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public EnvironmentNotOfferedException(String message) {
    super(message);
  }
}
