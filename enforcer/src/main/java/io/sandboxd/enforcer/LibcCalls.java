package io.sandboxd.enforcer;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.util.Optional;

/** Binds a JNA interface of libc calls where there is a libc to bind (Linux), once per caller. */
public final class LibcCalls {
  private LibcCalls() {}

  /** {@code calls} bound to the C library; empty off Linux or where it cannot be loaded. */
  public static <T extends Library> Optional<T> bind(Class<T> calls) {
    if (!System.getProperty("os.name", "").equals("Linux")) {
      return Optional.empty();
    }
    try {
      return Optional.of(Native.load("c", calls));
    } catch (UnsatisfiedLinkError | RuntimeException e) {
      return Optional.empty();
    }
  }
}
