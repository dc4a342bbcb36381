package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToLongFunction;
import org.junit.jupiter.api.Test;

/** The room units' writes leave on a file system: its size, what it admits, what it tells. */
class DiskReserveTest {
  private static final Path AT = Path.of("/state/storage/m");

  /** A file system of {@code total} bytes with {@code usable} free. */
  static DiskReserve.Room room(long total, long usable) {
    return room(total, at -> usable);
  }

  /** A file system of {@code total} bytes with {@code usable} of a path free. */
  static DiskReserve.Room room(long total, ToLongFunction<Path> usable) {
    return new DiskReserve.Room() {
      @Override
      public long usable(Path at) {
        return usable.applyAsLong(at);
      }

      @Override
      public long total(Path at) {
        return total;
      }
    };
  }

  @Test
  void theDefaultKeepsFivePercentOfTheFileSystemAndNeverMoreThanOneGibibyte() {
    List<String> told = new ArrayList<>();
    HostFaults sink = (call, what) -> told.add(call + ": " + what);
    assertEquals(838_860, new DiskReserve(-1, room(16 << 20, 0), sink).keptOn(AT));
    assertEquals(1L << 30, new DiskReserve(-1, room(1L << 40, 0), sink).keptOn(AT));
    assertEquals(4096, new DiskReserve(4096, room(1L << 40, 0), sink).keptOn(AT));
    assertTrue(told.isEmpty());
  }

  @Test
  void aFloorRaisesEveryReserveBelowItButTurnsNoneOnAndJudgesNoSizelessFileSystem() {
    HostFaults sink = (call, what) -> {};
    long floor = 8 << 20;
    // 5% of 16 MiB, or a configured 4 KiB, is less than the store's log takes: the floor is kept.
    assertEquals(floor, new DiskReserve(-1, floor, room(16 << 20, 0), sink).keptOn(AT));
    assertEquals(floor, new DiskReserve(4096, floor, room(1L << 40, 0), sink).keptOn(AT));
    // Above it the share or the configured bytes stand.
    assertEquals(1L << 30, new DiskReserve(-1, floor, room(1L << 40, 0), sink).keptOn(AT));
    assertEquals(1L << 26, new DiskReserve(1L << 26, floor, room(1L << 40, 0), sink).keptOn(AT));
    // 0 still turns the reserve off, and a file system with no size is still not judged.
    assertEquals(0, new DiskReserve(0, floor, room(1L << 40, 0), sink).keptOn(AT));
    assertEquals(0, new DiskReserve(-1, floor, room(0, 0), sink).keptOn(AT));
    // A write that would leave less than the floor free is refused though 5% would admit it.
    DiskReserve r = new DiskReserve(-1, floor, room(16 << 20, floor + 4096), sink);
    assertTrue(r.admits("storage", AT, 4096));
    assertFalse(r.admits("storage", AT, 4097));
    assertThrows(IllegalArgumentException.class, () -> new DiskReserve(-1, -1, room(0, 0), sink));
  }

  @Test
  void aWriteIsAdmittedWhileItLeavesTheReserveFreeAndRefusedWithItsReasonToldAfter() {
    List<String> told = new ArrayList<>();
    DiskReserve r =
        new DiskReserve(1000, room(1 << 20, 5000), (call, what) -> told.add(call + ": " + what));
    assertTrue(r.admits("storage", AT, 4000));
    assertTrue(r.admits("storage", AT, 0));
    assertTrue(r.admits("storage", AT, -7));
    assertTrue(told.isEmpty());
    assertFalse(r.admits("storage", AT, 4001));
    assertFalse(r.admits("kv", AT, Long.MAX_VALUE));
    assertEquals(2, told.size());
    assertEquals(
        "storage: refused a unit's write of 4001 bytes: the file system holding /state/storage/m"
            + " has 5000 bytes free (0 of them promised to writes under way), and 1000 are kept"
            + " for the node's own records (quotas.reserve_bytes)",
        told.get(0));
    assertTrue(told.get(1).startsWith("kv: refused a unit's write of " + Long.MAX_VALUE));
  }

  @Test
  void writesUnderWayCountAgainstTheRoomTheOthersSeeUntilTheyLand() {
    List<String> told = new ArrayList<>();
    // The disk shows 5000 free throughout: the bytes of a write under way are not on it yet.
    DiskReserve r =
        new DiskReserve(1000, room(1 << 20, 5000), (call, what) -> told.add(call + ": " + what));
    assertTrue(r.claims("storage", AT, 3000));
    assertFalse(r.claims("storage", AT, 2000), "two writes that each fit alone");
    assertFalse(r.admits("kv", AT, 2000));
    assertTrue(r.admits("kv", AT, 1000));
    assertTrue(told.get(0).contains("(3000 of them promised to writes under way)"), told.get(0));
    r.landed(3000);
    assertTrue(r.claims("storage", AT, 2000));
    assertTrue(r.claims("storage", AT, 2000));
    assertFalse(r.claims("storage", AT, 1));
    r.landed(2000);
    r.landed(2000);
    // Landing more than was claimed (a caller's slip) never makes room that is not there.
    r.landed(1 << 20);
    assertTrue(r.claims("storage", AT, 4000));
    assertFalse(r.claims("storage", AT, 1));
  }

  @Test
  void noReserveAndAFileSystemThatReportsNoSizeAdmitEveryWrite() {
    HostFaults loud =
        (call, what) -> {
          throw new AssertionError(what);
        };
    assertTrue(new DiskReserve(0, room(1 << 20, 0), loud).admits("storage", AT, 1 << 30));
    assertTrue(new DiskReserve(-1, room(0, 0), loud).admits("storage", AT, 1 << 30));
    assertThrows(IllegalArgumentException.class, () -> new DiskReserve(-2, room(0, 0), loud));
  }
}
