package io.sandboxd.enforcer;

import io.sandboxd.attest.JsonReader;

/** A grant document that cannot be accepted; the message starts with the JSON path at fault. */
public final class GrantsException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** How the strict JSON reader reports a grant field at fault. */
  public static final JsonReader.Fault FAULT = GrantsException::new;

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
