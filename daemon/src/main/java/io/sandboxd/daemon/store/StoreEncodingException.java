package io.sandboxd.daemon.store;

import io.sandboxd.attest.AttestException;

/**
 * A stored record's bytes are encoded but do not decode: damage, named by the byte at fault. It is
 * an {@link AttestException}, so every check that reports an unreadable record reports this too.
 */
public final class StoreEncodingException extends AttestException {
  private static final long serialVersionUID = 1L;

  public StoreEncodingException(String message) {
    super("stored record: " + message);
  }
}
