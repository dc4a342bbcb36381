package io.sandboxd.executor;

import java.nio.file.Path;
import java.util.Optional;

/**
 * What one exec's processes may write, which the host does not see byte by byte as it sees a unit's
 * own writes: no file larger than the module's room under its storage quota or the disk's headroom
 * above the node's reserve (set on the tree before it starts), the quota and the reserve checked
 * while the tree runs, and the module's count walked again from the disk once it is gone.
 */
final class ExecRoom {
  /** The least time between two checks of a running tree. */
  static final long CHECK_EVERY_NANOS = 100_000_000L;

  /** A check takes at most one in this many of the tree's moments: a walk of 10^5 files is slow. */
  private static final int CHECK_SHARE = 5;

  private final StorageLedger ledger;
  private final Path dir;
  private final HostServices services;
  private long nextCheck = System.nanoTime() + CHECK_EVERY_NANOS;

  /**
   * The room of a tree working in {@code dir}: the storage root's, under its module's ledger, or a
   * scratch directory's, under the node's reserve alone.
   */
  ExecRoom(Optional<StorageRoot> storage, Path dir, HostServices services) {
    this.ledger = storage.map(StorageRoot::ledger).orElse(StorageLedger.NONE);
    this.dir = dir;
    this.services = services;
  }

  /** The size no file the tree writes may pass. */
  long fileLimit() {
    long limit = Math.min(ledger.room(), services.reserve().headroom(dir));
    return limit == Long.MAX_VALUE ? ProcessTree.NO_FILE_LIMIT : Math.max(0, limit);
  }

  /** When a running tree should next be checked ({@link System#nanoTime}). */
  long nextCheck() {
    return nextCheck;
  }

  /**
   * Whether the tree has kept within the quota and the reserve so far; the next check is paced by
   * what this one took.
   */
  boolean held() {
    long t0 = System.nanoTime();
    boolean held = ledger.remeasure();
    if (held && services.reserve().headroom(dir) < 0) {
      services
          .faults()
          .told(
              "exec",
              "stopped a unit's exec'd program: the file system holding "
                  + dir
                  + " is down to the bytes kept for the node's own records (quotas.reserve_bytes)");
      held = false;
    }
    long now = System.nanoTime();
    nextCheck = now + Math.max(CHECK_EVERY_NANOS, (now - t0) * (CHECK_SHARE - 1));
    return held;
  }

  /** Counts what the tree left, once it is gone: the run's later writes see it. */
  void settle() {
    ledger.remeasure();
  }
}
