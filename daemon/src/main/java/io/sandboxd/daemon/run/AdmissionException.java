package io.sandboxd.daemon.run;

/** A submission refused before any run exists: malformed grants, module or entry. */
public final class AdmissionException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public AdmissionException(String message, Throwable cause) {
    super(message, cause);
  }

  public AdmissionException(String message) {
    super(message);
  }
}
