package io.sandboxd.metering;

/** A meter could not be read; the message names the file, call or counter at fault. */
public final class MeterException extends Exception {
  private static final long serialVersionUID = 1L;

  public MeterException(String message) {
    super(message);
  }

  public MeterException(String message, Throwable cause) {
    super(message, cause);
  }
}
