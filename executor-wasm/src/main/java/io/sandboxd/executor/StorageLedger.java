package io.sandboxd.executor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The bytes one module's storage holds, against the node's per-module quota: shared by every run of
 * the module that is live at once, measured from the disk when the first of them first grows the
 * storage (so bytes changed between runs, e.g. by an exec'd child, are counted again, and a run
 * that never writes never walks the module's files). A growth is reserved before the write and
 * settled to what the disk then shows, so concurrent runs cannot overshoot together. Each entry
 * costs {@link #ENTRY_BYTES} plus its apparent size, so holes count and so do names.
 */
final class StorageLedger {
  /** What a name costs whatever it holds: bounds the number of entries as well as the bytes. */
  static final long ENTRY_BYTES = 4096;

  /** No quota: every reservation fits. */
  static final StorageLedger NONE = new StorageLedger(null, Long.MAX_VALUE, DiskReserve.NONE, 0);

  private static final Map<Path, StorageLedger> LIVE = new HashMap<>();

  /** {@link #used} before the disk was measured. */
  private static final long UNMEASURED = -1;

  private final Path root;
  private final long quota;
  private final DiskReserve disk;
  private long used;
  // Growth reserved by writes not settled yet: what a walk of the disk may not show so far.
  private long writesInFlight;
  private int holders;
  private int measurements;

  private StorageLedger(Path root, long quota, DiskReserve disk, long used) {
    this.root = root;
    this.quota = quota;
    this.disk = disk;
    this.used = used;
  }

  static StorageLedger acquire(Path realRoot, long quota, DiskReserve disk) {
    synchronized (LIVE) {
      StorageLedger l = LIVE.get(realRoot);
      if (l == null || l.quota != quota || l.disk != disk) {
        // Measured on the first growth, not here: most runs never write, and a walk of the module's
        // files on every start cost each run a directory read per entry (and grew with the store).
        l = new StorageLedger(realRoot, quota, disk, UNMEASURED);
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

  /**
   * The bytes held, measuring the disk first if no run has grown the storage yet.
   *
   * @throws UncheckedIOException when the module's files cannot be walked
   */
  synchronized long used() {
    if (!measured()) {
      throw new UncheckedIOException(
          new IOException("storage " + root + ": cannot measure what it holds"));
    }
    return used;
  }

  /** How often the disk was walked for this ledger (tests: a run that never writes walks none). */
  synchronized int measurements() {
    return measurements;
  }

  /** Measures the disk unless done; false when it cannot be walked (measured again next time). */
  private boolean measured() {
    if (used != UNMEASURED) {
      return true;
    }
    try {
      used = StorageRoot.usage(root);
    } catch (IOException e) {
      return false;
    }
    measurements++;
    return true;
  }

  /**
   * Reserves {@code bytes} (0 or more); false, reserving nothing, when the quota would be passed,
   * when what the storage holds cannot be measured (a quota that cannot be checked is not met), or
   * when the bytes would take the node's {@link DiskReserve} on the file system.
   */
  synchronized boolean reserve(long bytes) {
    return reserve(bytes, false);
  }

  /**
   * As {@link #reserve}, for a write of {@code bytes} that the disk shows only once it is done: the
   * disk's reserve counts them as in flight until {@link #settleWrite}.
   */
  synchronized boolean reserveWrite(long bytes) {
    return reserve(bytes, true);
  }

  private boolean reserve(long bytes, boolean write) {
    if (this == NONE || bytes <= 0) {
      return true;
    }
    if (!measured()
        || bytes > quota - used
        || !(write ? disk.claims("storage", root, bytes) : disk.admits("storage", root, bytes))) {
      return false;
    }
    used += bytes;
    if (write) {
      writesInFlight += bytes;
    }
    return true;
  }

  /**
   * The bytes the module may still add: its quota less what it holds, measuring the disk first if
   * no run has ({@link Long#MAX_VALUE} without a quota; 0 when the storage cannot be measured).
   */
  synchronized long room() {
    if (this == NONE) {
      return Long.MAX_VALUE;
    }
    return measured() ? Math.max(0, quota - used) : 0;
  }

  /**
   * Walks the disk again, for bytes written behind the ledger's back (an exec'd program's): the
   * count becomes what the disk shows plus the writes still under way. False when that passes the
   * quota, or when the walk fails (a quota that cannot be checked is not met, and the next
   * reservation walks again).
   */
  synchronized boolean remeasure() {
    if (this == NONE) {
      return true;
    }
    used = UNMEASURED;
    if (!measured()) {
      return false;
    }
    used += writesInFlight;
    return used <= quota;
  }

  /**
   * Corrects the count by {@code delta} once the disk shows what an operation really did. Before
   * the first measurement there is no count to correct: the walk, when it comes, sees the disk.
   */
  synchronized void settle(long delta) {
    if (this != NONE && used != UNMEASURED) {
      used = Math.max(0, used + delta);
    }
  }

  /** Settles a {@link #reserveWrite} of {@code bytes} by {@code delta}: the write is done. */
  synchronized void settleWrite(long bytes, long delta) {
    settle(delta);
    if (this != NONE) {
      writesInFlight = Math.max(0, writesInFlight - Math.max(0, bytes));
      disk.landed(bytes);
    }
  }
}
