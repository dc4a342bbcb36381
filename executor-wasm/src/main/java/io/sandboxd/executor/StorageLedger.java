package io.sandboxd.executor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The bytes one module's storage holds, against the node's per-module quota: shared by every run of
 * the module that is live at once, measured from the disk when the first of them starts (so bytes
 * changed between runs, e.g. by an exec'd child, are counted again). A growth is reserved before
 * the write and settled to what the disk then shows, so concurrent runs cannot overshoot together.
 * Each entry costs {@link #ENTRY_BYTES} plus its apparent size, so holes count and so do names.
 */
final class StorageLedger {
  /** What a name costs whatever it holds: bounds the number of entries as well as the bytes. */
  static final long ENTRY_BYTES = 4096;

  /** No quota: every reservation fits. */
  static final StorageLedger NONE = new StorageLedger(null, Long.MAX_VALUE, 0);

  private static final Map<Path, StorageLedger> LIVE = new HashMap<>();

  private final Path root;
  private final long quota;
  private long used;
  private int holders;

  private StorageLedger(Path root, long quota, long used) {
    this.root = root;
    this.quota = quota;
    this.used = used;
  }

  static StorageLedger acquire(Path realRoot, long quota) {
    synchronized (LIVE) {
      StorageLedger l = LIVE.get(realRoot);
      if (l == null || l.quota != quota) {
        try {
          l = new StorageLedger(realRoot, quota, StorageRoot.usage(realRoot));
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
        if (LIVE.get(realRoot) == null) {
          LIVE.put(realRoot, l);
        }
      }
      l.holders++;
      return l;
    }
  }

  void release() {
    if (this == NONE) {
      return;
    }
    synchronized (LIVE) {
      holders--;
      if (holders <= 0 && LIVE.get(root) == this) {
        LIVE.remove(root);
      }
    }
  }

  long quota() {
    return quota;
  }

  synchronized long used() {
    return used;
  }

  /**
   * Reserves {@code bytes} (0 or more); false, reserving nothing, when the quota would be passed.
   */
  synchronized boolean reserve(long bytes) {
    if (this == NONE || bytes <= 0) {
      return true;
    }
    if (bytes > quota - used) {
      return false;
    }
    used += bytes;
    return true;
  }

  /** Corrects the count by {@code delta} once the disk shows what an operation really did. */
  synchronized void settle(long delta) {
    if (this != NONE) {
      used = Math.max(0, used + delta);
    }
  }
}
