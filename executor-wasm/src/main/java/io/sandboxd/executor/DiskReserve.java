package io.sandboxd.executor;

import java.io.File;
import java.nio.file.Path;

/**
 * Room on a file system that units' writes (storage files, kv values) never take, kept for the
 * node's own records: runs, parks, receipts. Per-module quotas alone do not keep it, since a client
 * may submit any number of modules, each with a quota of its own.
 */
public final class DiskReserve {
  /** The default reserve's ceiling: the smaller of this and {@link #DEFAULT_PERCENT}. */
  public static final long DEFAULT_CEILING = 1L << 30;

  /** The default reserve, in percent of the file system's size. */
  public static final int DEFAULT_PERCENT = 5;

  /** A file system's room, as statvfs(2) gives it. */
  public interface Room {
    /** Bytes an unprivileged writer may still take on the file system holding {@code at}. */
    long usable(Path at);

    /** The size of that file system. */
    long total(Path at);
  }

  /** The node's file systems, read through {@link File} (one statvfs each, no mount table). */
  public static final Room STATVFS =
      new Room() {
        @Override
        public long usable(Path at) {
          return at.toFile().getUsableSpace();
        }

        @Override
        public long total(Path at) {
          return at.toFile().getTotalSpace();
        }
      };

  /** No reserve: writes stop only where the file system does. */
  public static final DiskReserve NONE = new DiskReserve(0, STATVFS, HostFaults.UNHEARD);

  private final long bytes;
  private final long floor;
  private final Room room;
  private final HostFaults told;
  // Growth admitted to writes still under way: each counts against the room the others see, so
  // writes admitted at once (units of many modules, each as large as its memory) cannot together
  // take the reserve that each alone would leave.
  private long inFlight;

  /**
   * {@code bytes} kept free (-1: the default, the smaller of 1 GiB and 5% of each file system),
   * read through {@code room}; each refusal is {@code told}.
   */
  public DiskReserve(long bytes, Room room, HostFaults told) {
    this(bytes, 0, room, told);
  }

  /**
   * As {@link #DiskReserve(long, Room, HostFaults)}, never keeping less than {@code floor} where it
   * keeps anything: what the node's own stores take between their checkpoints, which a reserve
   * sized by the file system alone (5% of a small one) would not hold.
   */
  public DiskReserve(long bytes, long floor, Room room, HostFaults told) {
    if (bytes < -1) {
      throw new IllegalArgumentException("a reserve of " + bytes + " bytes");
    }
    if (floor < 0) {
      throw new IllegalArgumentException("a reserve floor of " + floor + " bytes");
    }
    this.bytes = bytes;
    this.floor = floor;
    this.room = room;
    this.told = told;
  }

  /** The default reserve on the node's file systems, its refusals {@code told}. */
  public static DiskReserve byDefault(HostFaults told) {
    return new DiskReserve(-1, STATVFS, told);
  }

  /**
   * The bytes kept free on the file system holding {@code at}: none when turned off (0) or where
   * the default is asked of a file system that reports no size, else at least the floor.
   */
  public long keptOn(Path at) {
    if (bytes > 0) {
      return Math.max(floor, bytes);
    }
    if (bytes == 0) {
      return 0;
    }
    long total = room.total(at);
    return total == 0
        ? 0
        : Math.max(floor, Math.min(DEFAULT_CEILING, total / 100 * DEFAULT_PERCENT));
  }

  /**
   * Whether {@code growth} more bytes of {@code what} (a store's name, for the telling) on the file
   * system holding {@code at} leave its reserve free, with the writes in flight; a refusal is told.
   * A file system that reports no size (0) is not judged.
   */
  public boolean admits(String what, Path at, long growth) {
    return admits(what, at, growth, false);
  }

  /**
   * As {@link #admits}, and an admitted {@code growth} counts as in flight until {@link #landed}:
   * for a write whose bytes the disk does not show until it is done.
   */
  public boolean claims(String what, Path at, long growth) {
    return admits(what, at, growth, true);
  }

  /**
   * The bytes a unit may still add on the file system holding {@code at} before the reserve, with
   * the writes in flight ({@link Long#MAX_VALUE} with no reserve there; negative once the reserve
   * is taken): what a write the host does not see, an exec'd program's, is bounded by.
   */
  public long headroom(Path at) {
    if (bytes == 0) {
      return Long.MAX_VALUE;
    }
    long kept = keptOn(at);
    if (kept == 0) {
      return Long.MAX_VALUE;
    }
    long usable = room.usable(at);
    synchronized (this) {
      return usable - inFlight - kept;
    }
  }

  /** The write {@link #claims} admitted {@code growth} to is done, whatever came of it. */
  public synchronized void landed(long growth) {
    if (bytes != 0 && growth > 0) {
      inFlight = Math.max(0, inFlight - growth);
    }
  }

  private boolean admits(String what, Path at, long growth, boolean claim) {
    if (bytes == 0 || growth <= 0) {
      return true;
    }
    long kept = keptOn(at);
    long usable = room.usable(at);
    long promised;
    synchronized (this) {
      if (kept == 0 || usable - inFlight - growth >= kept) {
        if (claim) {
          inFlight += growth;
        }
        return true;
      }
      promised = inFlight;
    }
    // Told outside the lock: every unit's write on the node passes through it.
    told.told(
        what,
        "refused a unit's write of "
            + growth
            + " bytes: the file system holding "
            + at
            + " has "
            + usable
            + " bytes free ("
            + promised
            + " of them promised to writes under way), and "
            + kept
            + " are kept for the node's own records (quotas.reserve_bytes)");
    return false;
  }
}
