package io.sandboxd.daemon.run;

/** A submission's input is over a cap of the node (stdin bytes, argv entries or bytes). */
public final class InputTooLargeException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public InputTooLargeException(String message) {
    super(message);
  }
}
