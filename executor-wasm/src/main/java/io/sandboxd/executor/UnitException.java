package io.sandboxd.executor;

/** A unit that cannot be run as submitted; the message names the part at fault. */
public final class UnitException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Which part of a submission is at fault. */
  public enum Part {
    MODULE,
    ENTRY,
    IMPORT,
    MEMORY,
    /** A declaration or cost past the node's compile limits. */
    LIMIT
  }

  private final Part part;

  public UnitException(Part part, String message) {
    super(message);
    this.part = part;
  }

  public UnitException(Part part, String message, Throwable cause) {
    super(message, cause);
    this.part = part;
  }

  public Part part() {
    return part;
  }
}
