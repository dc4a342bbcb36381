package io.sandboxd.attest;

/** A signed object, key or document that cannot be used: names the field or byte at fault. */
public class AttestException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public AttestException(String message) {
    super(message);
  }

  public AttestException(String message, Throwable cause) {
    super(message, cause);
  }
}
