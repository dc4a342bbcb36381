package io.sandboxd.executor;

/** An environment's mount cannot be made on this node: the message names the mount and why. */
public final class MountException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public MountException(String message) {
    super(message);
  }

  public MountException(String message, Throwable cause) {
    super(message, cause);
  }
}
