package io.sandboxd.executor;

/**
 * The module store could not read or write (the disk, not the caller); its subclasses are the
 * caller's mistakes or damage found on read, each answered with its own status.
 */
public class ModuleStoreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public ModuleStoreException(String message, Throwable cause) {
    super(message, cause);
  }

  /** No module of that address is held on this node. */
  public static final class NotFound extends ModuleStoreException {
    private static final long serialVersionUID = 1L;

    public NotFound(String address) {
      super("module_address: b3:" + address + " is not held on this node (put it first)", null);
    }
  }

  /** Not a module address: {@code b3:<64 hex>} or 64 hex. */
  public static final class BadAddress extends ModuleStoreException {
    private static final long serialVersionUID = 1L;

    public BadAddress(String message) {
      super(message, null);
    }
  }

  /** A bound of the store: module size or module count. */
  public static final class Limit extends ModuleStoreException {
    private static final long serialVersionUID = 1L;

    public Limit(String message) {
      super(message, null);
    }
  }

  /** A held module whose bytes no longer hash to its address. */
  public static final class Damaged extends ModuleStoreException {
    private static final long serialVersionUID = 1L;

    public Damaged(String message) {
      super(message, null);
    }
  }
}
