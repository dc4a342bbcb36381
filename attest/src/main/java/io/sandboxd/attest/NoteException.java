package io.sandboxd.attest;

/**
 * A signed note (C2SP signed-note) or checkpoint (C2SP tlog-checkpoint) that cannot be accepted;
 * {@link #reason()} says which kind of fault, the message names the line or byte at fault.
 */
public final class NoteException extends AttestException {
  private static final long serialVersionUID = 1L;

  /** Why a note was refused. */
  public enum Reason {
    /** Not a well-formed signed note or checkpoint body (the message names the line). */
    MALFORMED,
    /** No signature line is from a key the verifier knows (unknown signatures are ignored). */
    UNKNOWN_KEY,
    /** A signature from a known key does not verify over the note text. */
    BAD_SIGNATURE,
    /** The checkpoint's origin is not the log the verifier expected. */
    WRONG_ORIGIN
  }

  private final Reason reason;

  public NoteException(Reason reason, String message) {
    super(message);
    this.reason = reason;
  }

  public Reason reason() {
    return reason;
  }
}
