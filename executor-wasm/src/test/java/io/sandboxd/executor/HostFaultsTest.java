package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Host calls that fail on the node's side are told to the node as well as answered UNAVAILABLE; the
 * failures a unit's own names cause are answered the same and not told, so no unit can pass its
 * mistakes off as the node's.
 */
class HostFaultsTest {
  @TempDir Path dir;

  private final ConcurrentLinkedQueue<String> told = new ConcurrentLinkedQueue<>();

  private final HostFaults faults = (call, what) -> told.add(call + ": " + what);

  private Executor executor(KvStore kv) {
    return executor(kv, DiskReserve.NONE);
  }

  private Executor executor(KvStore kv, DiskReserve reserve) {
    return new Executor(
        1,
        EnergyModel.estimate(10_000),
        60_000,
        HostServices.none().toBuilder().kv(kv).reserve(reserve).faults(faults).build());
  }

  @Test
  void aKvPutTheStoreHasNoRoomForIsAnsweredUnavailableAndToldWithItsReason() throws Exception {
    String unit =
        """
        (module
          (import "sandbox" "kv_put" (func $put (param i32 i32 i32 i32) (result i32)))
          (memory 2)
          (data (i32.const 0) "big/k")
          (func (export "run") (result i32)
            (call $put (i32.const 0) (i32.const 5) (i32.const 64) (i32.const 100000))))
        """;
    String rw = "{\"read\":true,\"write\":true,\"prefixes\":[]}";
    String grants = AbiTest.grants(AbiTest.NO_STORAGE, rw, AbiTest.NO_NET, AbiTest.LOG);
    try (KvStore kv = KvStore.open(dir.resolve("kv.db"));
        Executor ex = executor(kv)) {
      kv.maxPages(1);
      assertEquals(AbiStatus.UNAVAILABLE, AbiTest.returned(AbiTest.run(ex, unit, grants, null)));
      assertEquals(1, told.size(), told.toString());
      assertTrue(
          told.peek().startsWith("kv_put: ") && told.peek().contains("SQLITE_FULL"),
          told.toString());

      kv.maxPages(1 << 20);
      assertEquals(AbiStatus.OK, AbiTest.returned(AbiTest.run(ex, unit, grants, null)));
      assertEquals(1, told.size(), told.toString());
    }
  }

  @Test
  void storageFailuresTheUnitsOwnNamesCauseAreAnsweredUnavailableAndNotTold() throws Exception {
    // Writes d/x, then: a write to d (a directory), a write beneath the file d/x, a delete of d
    // (not empty). Returns the three statuses as one number, each offset by 10.
    String unit =
        """
        (module
          (import "sandbox" "storage_write" (func $w (param i32 i32 i64 i32 i32) (result i32)))
          (import "sandbox" "storage_delete" (func $d (param i32 i32) (result i32)))
          (memory 1)
          (data (i32.const 0) "d/x/y")
          (data (i32.const 200) "bytes")
          (func (export "run") (result i32) (local $s i32)
            (local.set $s (call $w (i32.const 0) (i32.const 3) (i64.const 0) (i32.const 200) (i32.const 5)))
            (if (i32.ne (local.get $s) (i32.const 0)) (then (return (i32.const 1))))
            (i32.add
              (i32.add
                (i32.mul (i32.const 10000)
                  (i32.add (i32.const 10) (call $w (i32.const 0) (i32.const 1) (i64.const 0) (i32.const 200) (i32.const 5))))
                (i32.mul (i32.const 100)
                  (i32.add (i32.const 10) (call $w (i32.const 0) (i32.const 5) (i64.const 0) (i32.const 200) (i32.const 5)))))
              (i32.add (i32.const 10) (call $d (i32.const 0) (i32.const 1))))))
        """;
    String storage = "{\"read\":[],\"write\":[\"**\"],\"delete\":[\"**\"]}";
    String grants = AbiTest.grants(storage, AbiTest.NO_KV, AbiTest.NO_NET, AbiTest.LOG);
    Path root = Files.createDirectories(dir.resolve("unit-storage"));
    try (KvStore kv = KvStore.open(dir.resolve("kv.db"));
        Executor ex = executor(kv)) {
      int u = 10 + AbiStatus.UNAVAILABLE;
      assertEquals(u * 10000 + u * 100 + u, AbiTest.returned(AbiTest.run(ex, unit, grants, root)));
      assertTrue(Files.isRegularFile(root.resolve("d/x")));
    }
    assertEquals(List.of(), List.copyOf(told));
  }

  @Test
  void writesThatWouldTakeTheDisksReserveAreAnsweredQuotaAndTold() throws Exception {
    // A file system with 64 KiB free, all of it kept: no unit write fits, whatever its quota.
    DiskReserve.Room full = DiskReserveTest.room(1L << 40, 64 << 10);
    DiskReserve reserve = new DiskReserve(64 << 10, full, faults);
    String unit =
        """
        (module
          (import "sandbox" "kv_put" (func $put (param i32 i32 i32 i32) (result i32)))
          (import "sandbox" "storage_write" (func $w (param i32 i32 i64 i32 i32) (result i32)))
          (memory 1)
          (data (i32.const 0) "k")
          (func (export "run") (result i32)
            (i32.add
              (i32.mul (i32.const 100)
                (call $put (i32.const 0) (i32.const 1) (i32.const 64) (i32.const 10)))
              (call $w (i32.const 0) (i32.const 1) (i64.const 0) (i32.const 64) (i32.const 10)))))
        """;
    String storage = "{\"read\":[],\"write\":[\"**\"],\"delete\":[]}";
    String rw = "{\"read\":true,\"write\":true,\"prefixes\":[]}";
    String grants = AbiTest.grants(storage, rw, AbiTest.NO_NET, AbiTest.LOG);
    Path root = Files.createDirectories(dir.resolve("unit-storage"));
    try (KvStore kv = KvStore.open(dir.resolve("kv.db"), reserve);
        Executor ex = executor(kv, reserve)) {
      assertEquals(AbiStatus.QUOTA * 101, AbiTest.returned(AbiTest.run(ex, unit, grants, root)));
      assertFalse(Files.exists(root.resolve("k")));
      assertTrue(kv.get("k".getBytes(java.nio.charset.StandardCharsets.UTF_8)).isEmpty());
    }
    assertEquals(2, told.size(), told.toString());
    assertTrue(
        told.stream().anyMatch(t -> t.startsWith("kv: refused a unit's write")), told.toString());
    assertTrue(
        told.stream().anyMatch(t -> t.startsWith("storage: refused a unit's write")),
        told.toString());
  }

  @Test
  void whatTheNodesOwnFileSystemCausesIsNotTakenForTheUnits() throws Exception {
    // As the JDK raises them: a write(2) or fsync(2) that fails, and an open that fails.
    assertFalse(StorageCalls.unitCaused(new IOException("No space left on device")));
    assertFalse(StorageCalls.unitCaused(new IOException("Input/output error")));
    assertFalse(
        StorageCalls.unitCaused(new FileSystemException("/s/f", null, "Disk quota exceeded")));
    assertFalse(
        StorageCalls.unitCaused(new FileSystemException("/s/f", null, "Read-only file system")));
    assertFalse(
        StorageCalls.unitCaused(new FileSystemException("/s/f", null, "Too many open files")));
    assertFalse(StorageCalls.unitCaused(new AccessDeniedException("/s/f")));
    // And the unit's, as the real file system raises them.
    Path f = Files.writeString(dir.resolve("f"), "x");
    IOException below =
        assertThrows(IOException.class, () -> Files.createDirectories(f.resolve("below")));
    assertTrue(StorageCalls.unitCaused(below), below.toString());
    IOException isDirectory =
        assertThrows(
            IOException.class, () -> FileChannel.open(dir, StandardOpenOption.WRITE).close());
    assertTrue(StorageCalls.unitCaused(isDirectory), isDirectory.toString());
  }
}
