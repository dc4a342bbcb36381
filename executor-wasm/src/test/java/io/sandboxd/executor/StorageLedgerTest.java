package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The per-module storage ledger: a run that never grows its storage never walks the module's files,
 * and the first growth counts what the disk holds then, whatever changed since the root was opened.
 */
class StorageLedgerTest {
  @TempDir Path dir;

  @Test
  void openingAndClosingARootWalksNothing() throws Exception {
    Path root = dir.resolve("m");
    Files.createDirectories(root);
    for (int i = 0; i < 50; i++) {
      Files.write(root.resolve("f" + i), new byte[100]);
    }
    for (int run = 0; run < 3; run++) {
      try (StorageRoot r = StorageRoot.open(root, 1 << 20, DiskReserve.NONE)) {
        assertEquals(0, r.ledger().measurements(), "run " + run + " walked the module's files");
        assertTrue(r.ledger().reserve(0), "an empty reservation needs no count");
        assertEquals(0, r.ledger().measurements());
      }
    }
  }

  @Test
  void theFirstGrowthCountsWhatTheDiskHoldsThen() throws Exception {
    Path root = dir.resolve("m");
    Files.createDirectories(root);
    long quota = 10 * StorageLedger.ENTRY_BYTES;
    try (StorageRoot r = StorageRoot.open(root, quota, DiskReserve.NONE)) {
      // Written after the root opened (an exec'd child, another tool): still counted.
      Files.write(root.resolve("late"), new byte[5000]);
      StorageLedger l = r.ledger();
      long held = StorageLedger.ENTRY_BYTES + 5000;
      assertFalse(l.reserve(quota - held + 1), "the late file's bytes were not counted");
      assertTrue(l.reserve(quota - held));
      assertEquals(1, l.measurements());
      assertEquals(quota, l.used());
      assertFalse(l.reserve(1), "a full quota took one more byte");
      assertEquals(1, l.measurements(), "the disk was walked again");
    }
  }

  @Test
  void aSettleBeforeAnyCountIsLeftToTheWalk() throws Exception {
    Path root = dir.resolve("m");
    Files.createDirectories(root);
    Files.write(root.resolve("a"), new byte[3000]);
    try (StorageRoot r = StorageRoot.open(root, 1 << 20, DiskReserve.NONE)) {
      StorageLedger l = r.ledger();
      // A delete settles before anything was reserved: the walk that comes later sees the disk.
      Files.delete(root.resolve("a"));
      l.settle(-(StorageLedger.ENTRY_BYTES + 3000));
      assertEquals(0, l.used());
      // Once counted, settles correct the count.
      assertTrue(l.reserve(100));
      l.settle(-40);
      assertEquals(60, l.used());
    }
  }

  @Test
  void concurrentRunsOfAModuleShareOneCount() throws Exception {
    Path root = dir.resolve("m");
    Files.createDirectories(root);
    long quota = 1000;
    try (StorageRoot a = StorageRoot.open(root, quota, DiskReserve.NONE);
        StorageRoot b = StorageRoot.open(root, quota, DiskReserve.NONE)) {
      assertSame(a.ledger(), b.ledger());
      assertTrue(a.ledger().reserve(600));
      assertFalse(b.ledger().reserve(600), "two runs overshot the quota together");
      assertTrue(b.ledger().reserve(400));
      assertEquals(1, a.ledger().measurements());
    }
    // Once every run has let go, the next run counts afresh.
    Files.write(root.resolve("x"), new byte[10]);
    try (StorageRoot c = StorageRoot.open(root, quota, DiskReserve.NONE)) {
      assertEquals(StorageLedger.ENTRY_BYTES + 10, c.ledger().used());
    }
  }

  @Test
  void randomWritesNeverPassTheQuota() throws Exception {
    // Seeded: many interleavings of growths and settles against what the disk then holds.
    Random rnd = new Random(0x5eed_1ed9L);
    for (int round = 0; round < 20; round++) {
      Path root = dir.resolve("r" + round);
      Files.createDirectories(root);
      int preexisting = rnd.nextInt(4);
      for (int i = 0; i < preexisting; i++) {
        Files.write(root.resolve("p" + i), new byte[rnd.nextInt(3000)]);
      }
      long quota =
          StorageRoot.usage(root)
              + StorageLedger.ENTRY_BYTES * (1 + rnd.nextInt(6))
              + rnd.nextInt(4000);
      try (StorageRoot r = StorageRoot.open(root, quota, DiskReserve.NONE)) {
        StorageLedger l = r.ledger();
        for (int op = 0; op < 30; op++) {
          int n = rnd.nextInt(2000);
          Path f = root.resolve("w" + op);
          long growth = StorageLedger.ENTRY_BYTES + n;
          if (l.reserve(growth)) {
            Files.write(f, new byte[n]);
          }
          assertTrue(
              StorageRoot.usage(root) <= quota,
              "round " + round + " op " + op + ": disk holds past the quota of " + quota);
          assertEquals(StorageRoot.usage(root), l.used(), "round " + round + " op " + op);
        }
      }
    }
  }

  @Test
  void aStorageThatCannotBeWalkedTakesNoGrowth() throws Exception {
    Path root = dir.resolve("m");
    Files.createDirectories(root);
    try (StorageRoot r = StorageRoot.open(root, 1 << 20, DiskReserve.NONE)) {
      // Gone between the open and the first write (root may read any directory, so a missing one
      // is the walk failure every user sees alike).
      Files.delete(root);
      assertFalse(r.ledger().reserve(1), "a quota that cannot be checked let a write through");
      assertEquals(0, r.ledger().measurements());
      Files.createDirectories(root);
      assertTrue(r.ledger().reserve(1), "the count was not tried again");
      assertEquals(1, r.ledger().measurements());
    }
  }
}
