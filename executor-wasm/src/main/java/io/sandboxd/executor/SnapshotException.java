package io.sandboxd.executor;

/**
 * A snapshot or storage tree that cannot be stored, loaded or restored; each subclass is one kind
 * of fault, named with the blob, field or path at fault. The base class alone is the node's own
 * disk.
 */
public class SnapshotException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public SnapshotException(String message, Throwable cause) {
    super(message, cause);
  }

  /** A blob the snapshot or tree names is not in the store (or the bundle). */
  public static final class MissingBlob extends SnapshotException {
    private static final long serialVersionUID = 1L;
    private final String address;

    public MissingBlob(String address, String what) {
      super("snapshot blob " + address + " (" + what + ") is missing", null);
      this.address = address;
    }

    public String address() {
      return address;
    }
  }

  /** A blob whose bytes do not hash to its address. */
  public static final class DamagedBlob extends SnapshotException {
    private static final long serialVersionUID = 1L;
    private final String address;

    public DamagedBlob(String address, String actual) {
      super("snapshot blob " + address + " is damaged: its bytes hash to " + actual, null);
      this.address = address;
    }

    public String address() {
      return address;
    }
  }

  /** A manifest (snapshot or tree) that is not well formed, naming the field at fault. */
  public static final class Malformed extends SnapshotException {
    private static final long serialVersionUID = 1L;

    public Malformed(String message) {
      super(message, null);
    }
  }

  /** A snapshot offered to an instance it does not fit: another module, or past its limits. */
  public static final class Mismatch extends SnapshotException {
    private static final long serialVersionUID = 1L;

    public Mismatch(String message) {
      super(message, null);
    }
  }

  /** A storage tree that may not be stored: a symlink, a special file, or over a size cap. */
  public static final class Refused extends SnapshotException {
    private static final long serialVersionUID = 1L;

    public Refused(String message) {
      super(message, null);
    }
  }
}
