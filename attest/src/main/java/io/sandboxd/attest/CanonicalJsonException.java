package io.sandboxd.attest;

/** A JSON document that cannot be canonicalized: names the byte or JSON path at fault. */
public final class CanonicalJsonException extends AttestException {
  private static final long serialVersionUID = 1L;

  public CanonicalJsonException(String message) {
    super(message);
  }

  public CanonicalJsonException(String message, Throwable cause) {
    super(message, cause);
  }
}
