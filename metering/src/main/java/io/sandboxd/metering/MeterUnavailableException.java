package io.sandboxd.metering;

/** A meter cannot be opened on this node; the message says why, for the startup log and listing. */
public final class MeterUnavailableException extends Exception {
  private static final long serialVersionUID = 1L;

  public MeterUnavailableException(String message) {
    super(message);
  }

  public MeterUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
