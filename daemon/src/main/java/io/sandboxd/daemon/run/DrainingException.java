package io.sandboxd.daemon.run;

/** A submission that arrived while the daemon is stopping: nothing ran; retry on another node. */
public final class DrainingException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public DrainingException(String message) {
    super(message);
  }
}
