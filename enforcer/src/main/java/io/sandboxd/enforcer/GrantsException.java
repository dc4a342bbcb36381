package io.sandboxd.enforcer;

/** A grant document that cannot be accepted; the message starts with the JSON path at fault. */
public final class GrantsException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String path;

  public GrantsException(String path, String problem) {
    super(path + ": " + problem);
    this.path = path;
  }

  public GrantsException(String path, String problem, Throwable cause) {
    super(path + ": " + problem, cause);
    this.path = path;
  }

  /** The JSON path at fault, e.g. {@code $.storage.read[2]}. */
  public String path() {
    return path;
  }
}
