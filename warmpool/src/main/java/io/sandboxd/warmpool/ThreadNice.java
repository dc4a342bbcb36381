package io.sandboxd.warmpool;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import io.sandboxd.enforcer.LibcCalls;
import java.util.Optional;

/**
 * The Linux nice value of the calling thread. {@link Thread#setPriority} does nothing on Linux (the
 * JVM ignores it unless started with a non-default ThreadPriorityPolicy), so a background thread
 * that must yield to runs asks the kernel itself: on Linux nice is per thread.
 */
final class ThreadNice {
  private ThreadNice() {}

  /** The two libc calls this needs (glibc 2.30 and later have gettid). */
  interface Libc extends Library {
    int PRIO_PROCESS = 0;

    int gettid();

    int setpriority(int which, int who, int prio) throws LastErrorException;
  }

  private static final class Bound {
    // Loaded on first use: a JVM without a loadable libc (not Linux) never gets here twice.
    static final Optional<Libc> C = LibcCalls.bind(Libc.class);
  }

  /**
   * Sets the calling thread's nice value to {@code nice} (0 to 19: raising it needs no privilege);
   * returns why not when the kernel or the platform refuses, empty when it was set.
   */
  static Optional<String> lowerCurrent(int nice) {
    if (nice < 0 || nice > 19) {
      throw new IllegalArgumentException("nice: expected 0..19, got " + nice);
    }
    if (!System.getProperty("os.name", "").equals("Linux")) {
      return Optional.of("per-thread nice is Linux only");
    }
    Optional<Libc> c = Bound.C;
    if (c.isEmpty()) {
      return Optional.of("libc is not loadable");
    }
    try {
      c.get().setpriority(Libc.PRIO_PROCESS, c.get().gettid(), nice);
      return Optional.empty();
    } catch (LastErrorException | UnsatisfiedLinkError e) {
      return Optional.of("setpriority failed: " + e.getMessage());
    }
  }
}
