package io.sandboxd.daemon.run;

/** The node policy refuses this caller this submission; the message names the rule. */
public final class PolicyDeniedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public PolicyDeniedException(String message) {
    super(message);
  }
}
