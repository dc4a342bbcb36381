package io.sandboxd.metering;

import java.io.IOException;
import java.util.function.LongSupplier;

/**
 * Node CPU time read at most once per window: the start and end of every run each take a metering
 * pass, and a pass asks twice (the estimator's CPU domain and the Kepler share), so four reads of
 * /proc/stat a run became one or two. The file counts in clock ticks (10 ms), and the kernel builds
 * it afresh, one line per CPU, on every read: a reading younger than the window is as exact as a
 * new one and costs nothing.
 */
public final class SharedCpuTime implements NodeCpuTime {
  /** How long a reading is reused: well under one clock tick of /proc/stat. */
  public static final long DEFAULT_WINDOW_NS = 1_000_000L;

  private final NodeCpuTime source;
  private final LongSupplier nanoTime;
  private final long windowNs;
  private boolean read;
  private long readAtNs;
  private long busyNs;

  public SharedCpuTime(NodeCpuTime source, LongSupplier nanoTime, long windowNs) {
    if (windowNs < 0) {
      throw new IllegalArgumentException("windowNs must not be negative: " + windowNs);
    }
    this.source = source;
    this.nanoTime = nanoTime;
    this.windowNs = windowNs;
  }

  @Override
  public synchronized long busyNs() throws IOException {
    long now = nanoTime.getAsLong();
    if (read && now - readAtNs >= 0 && now - readAtNs < windowNs) {
      return busyNs;
    }
    // A failed read is not remembered: the next caller tries the file again.
    long busy = source.busyNs();
    // Never below a reading already handed out: the counter only grows.
    busyNs = read ? Math.max(busyNs, busy) : busy;
    readAtNs = now;
    read = true;
    return busyNs;
  }
}
