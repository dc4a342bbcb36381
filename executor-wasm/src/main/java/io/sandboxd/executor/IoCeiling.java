package io.sandboxd.executor;

import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.Enforcer;

/**
 * Enforces the storage grant's I/O ceilings as a rate: the operations and read bytes of the last
 * second, asked of the Enforcer's {@code may_sustain_io} before each storage call.
 */
final class IoCeiling {
  private static final long WINDOW_NANOS = 1_000_000_000L;
  private final Enforcer enforcer;
  private long windowStart = System.nanoTime();
  private long ops;
  private long readBytes;

  IoCeiling(Enforcer enforcer) {
    this.enforcer = enforcer;
  }

  /** Whether one more operation reading {@code bytes} keeps the rate within the ceilings. */
  synchronized boolean admit(long bytes) {
    long now = System.nanoTime();
    if (now - windowStart >= WINDOW_NANOS) {
      windowStart = now;
      ops = 0;
      readBytes = 0;
    }
    Decision d = enforcer.maySustainIo(ops + 1, readBytes + bytes);
    if (!d.allowed()) {
      return false;
    }
    ops++;
    readBytes += bytes;
    return true;
  }
}
