package io.sandboxd.daemon.fleet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.MerkleHash;
import io.sandboxd.attest.MerkleTree;
import io.sandboxd.attest.MerkleVerifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The aggregator's durable log: same root as the generic tree, reopen, torn tail, dedup index. */
class FleetLogTest {
  @TempDir Path dir;

  private static String addr(int i) {
    return Blake3.hex(new byte[] {(byte) i, (byte) (i >> 8)});
  }

  @Test
  void reopenRebuildsTheSameTreeAndCutsATornTail() throws Exception {
    Path file = dir.resolve("fleet.log");
    String node = "ab".repeat(32);
    List<byte[]> leaves = new ArrayList<>();
    try (FleetLog log = FleetLog.open(file)) {
      for (int i = 0; i < 37; i++) {
        assertEquals(i, log.append(addr(i), node));
        leaves.add(Hex.decode(addr(i), 32, "a"));
      }
      log.sync();
      assertArrayEquals(MerkleTree.blake3(leaves).root(), log.head().root());
    }
    // A crash mid-write leaves part of an entry: it was never acknowledged, so it goes.
    Files.write(file, new byte[] {1, 2, 3}, StandardOpenOption.APPEND);
    try (FleetLog log = FleetLog.open(file)) {
      assertEquals(37, log.size());
      assertEquals(37 * FleetLog.ENTRY, Files.size(file));
      assertEquals(12, log.indexOf(addr(12)).getAsLong());
      assertTrue(log.indexOf(addr(99)).isEmpty());
      assertEquals(node, log.node(3));
      for (int i = 0; i < 37; i++) {
        assertTrue(
            MerkleVerifier.blake3()
                .verifyInclusion(log.prove(i), MerkleHash.blake3().leaf(leaves.get(i)), log.head())
                .isValid(),
            "leaf " + i);
      }
      log.append(addr(37), node);
      leaves.add(Hex.decode(addr(37), 32, "a"));
      assertArrayEquals(MerkleTree.blake3(leaves).root(), log.head().root());
    }
  }

  /**
   * Proofs built from kept subtrees (2^LOW leaves and more) and from subtrees hashed back out of
   * the file verify under the whole tree's root at every size, across the index's growth and a
   * reopen; every address is found at its leaf and no other is. Seeded sizes and leaves.
   */
  @Test
  void proofsAndLookupsFromWhatIsKeptAndWhatIsReadBack() throws Exception {
    Path file = dir.resolve("fleet.log");
    java.util.Random random = new java.util.Random(4_000);
    List<byte[]> leaves = new ArrayList<>();
    List<String> nodes = new ArrayList<>();
    java.util.Set<Integer> checkAt =
        new java.util.TreeSet<>(List.of(1, 2, 3, 15, 16, 17, 31, 32, 33, 683, 684, 1024, 2049));
    for (int i = 0; i < 12; i++) {
      checkAt.add(1 + random.nextInt(3_000));
    }
    int last = java.util.Collections.max(checkAt);
    try (FleetLog log = FleetLog.open(file)) {
      for (int n = 0; n < last; n++) {
        String node = Blake3.hex(new byte[] {(byte) (n % 7)});
        assertEquals(n, log.append(addr(n), node));
        leaves.add(Hex.decode(addr(n), 32, "a"));
        nodes.add(node);
        if (checkAt.contains(n + 1)) {
          log.sync();
          checkWhole(log, leaves, nodes, random);
        }
      }
    }
    try (FleetLog log = FleetLog.open(file)) {
      checkWhole(log, leaves, nodes, random);
    }
  }

  /** Addresses alike in the 8 bytes the index keeps are told apart by the whole address. */
  @Test
  void addressesWithTheSamePrefixAreToldApart() throws Exception {
    String prefix = "5a".repeat(8);
    String node = "ab".repeat(32);
    try (FleetLog log = FleetLog.open(dir.resolve("alike.log"))) {
      for (int i = 0; i < 40; i++) {
        String a = prefix + addr(i).substring(16);
        assertTrue(log.indexOf(a).isEmpty(), "found before it was appended: " + i);
        assertEquals(i, log.append(a, node));
      }
      for (int i = 0; i < 40; i++) {
        assertEquals(i, log.indexOf(prefix + addr(i).substring(16)).getAsLong());
      }
      assertTrue(log.indexOf(prefix + addr(40).substring(16)).isEmpty());
    }
  }

  private static void checkWhole(
      FleetLog log, List<byte[]> leaves, List<String> nodes, java.util.Random random)
      throws Exception {
    int size = leaves.size();
    assertEquals(size, log.size());
    assertArrayEquals(MerkleTree.blake3(leaves).root(), log.head().root(), "size " + size);
    List<Integer> picks = new ArrayList<>(List.of(0, size - 1, size / 2));
    for (int k = 0; k < 8; k++) {
      picks.add(random.nextInt(size));
    }
    for (int i : picks) {
      var proof = log.prove(i);
      assertTrue(
          MerkleVerifier.blake3()
              .verifyInclusion(proof, MerkleHash.blake3().leaf(leaves.get(i)), log.head())
              .isValid(),
          "leaf " + i + " of " + size);
      int other = (i + 1) % size;
      if (other != i) {
        assertFalse(
            MerkleVerifier.blake3()
                .verifyInclusion(proof, MerkleHash.blake3().leaf(leaves.get(other)), log.head())
                .isValid(),
            "leaf " + i + "'s proof also proved leaf " + other);
      }
      assertEquals(i, log.indexOf(Hex.encode(leaves.get(i))).getAsLong());
      assertEquals(nodes.get(i), log.node(i));
    }
    assertTrue(log.indexOf(addr(size + 5)).isEmpty());
  }

  /**
   * A disk that fills mid-entry, then frees, and a force that fails: every failure leaves the log
   * whole, nothing shifts, and what a failed force may have dropped is written again. Seeded cuts.
   */
  @Test
  void aFullDiskOrAFailedForceLeavesTheLogWholeAndInPlace() throws Exception {
    String node = "cd".repeat(32);
    java.util.Random random = new java.util.Random(22);
    for (int round = 0; round < 40; round++) {
      Path file = dir.resolve("fleet-" + round + ".log");
      List<byte[]> leaves = new ArrayList<>();
      FailingChannel ch = new FailingChannel(file);
      try (FleetLog log = FleetLog.over(ch, file)) {
        int n = 0;
        for (int step = 0; step < 30; step++) {
          // The disk takes between 0 and 63 more bytes of the next entry, then fails.
          boolean fill = random.nextInt(4) == 0;
          if (fill) {
            ch.room = random.nextInt(FleetLog.ENTRY);
          }
          try {
            log.append(addr(n), node);
            assertTrue(!fill, "an append past the disk's room succeeded");
            leaves.add(Hex.decode(addr(n), 32, "a"));
            n++;
          } catch (java.io.IOException e) {
            assertTrue(fill, "append failed: " + e);
            assertEquals(n, log.size(), "a failed append added nothing");
            assertTrue(log.indexOf(addr(n)).isEmpty());
            ch.room = Long.MAX_VALUE;
          }
          if (random.nextInt(5) == 0) {
            ch.failForce = true;
            assertThrows(java.io.IOException.class, log::sync);
            // A failed force drops what it held: the next force must write the entries again.
            ch.dropUnforced();
            log.sync();
            assertFalse(log.unsynced());
          }
        }
        log.sync();
        assertEquals(leaves.size(), log.size());
        assertArrayEquals(MerkleTree.blake3(leaves).root(), log.head().root());
      }
      // What reached the disk: every entry in place, in order, and nothing else whole.
      byte[] disk = ch.durable();
      assertEquals(leaves.size(), disk.length / FleetLog.ENTRY, "round " + round);
      for (int i = 0; i < leaves.size(); i++) {
        assertArrayEquals(
            leaves.get(i), java.util.Arrays.copyOfRange(disk, i * 64, i * 64 + 32), "leaf " + i);
      }
      java.nio.file.Files.write(file, disk);
      try (FleetLog log = FleetLog.open(file)) {
        assertEquals(leaves.size(), log.size());
        assertArrayEquals(MerkleTree.blake3(leaves).root(), log.head().root());
      }
    }
  }

  /**
   * A file channel over memory that models the disk under the page cache: {@code room} bytes more
   * may be written before a write fails part-way (as ENOSPC does), a force can be made to fail, and
   * the pages a failed force held can be dropped, as a kernel may after a failed writeback.
   */
  static final class FailingChannel extends java.nio.channels.FileChannel {
    private final Path path;
    private byte[] cache = new byte[0];
    private byte[] disk = new byte[0];
    long room = Long.MAX_VALUE;
    boolean failForce;
    long dropped;

    FailingChannel(Path path) {
      this.path = path;
    }

    byte[] durable() {
      return disk.clone();
    }

    /** The page cache loses what was never forced: it now reads as what the disk holds. */
    void dropUnforced() {
      byte[] next = cache.clone();
      for (int i = 0; i < next.length; i++) {
        byte was = i < disk.length ? disk[i] : 0;
        if (next[i] != was) {
          dropped++;
        }
        next[i] = was;
      }
      cache = next;
    }

    @Override
    public int write(java.nio.ByteBuffer src, long position) throws java.io.IOException {
      int n = src.remaining();
      int take = (int) Math.min(n, room);
      if (take == 0 && n > 0) {
        throw new java.io.IOException("No space left on device: " + path);
      }
      if (position + take > cache.length) {
        cache = java.util.Arrays.copyOf(cache, (int) (position + take));
      }
      src.get(cache, (int) position, take);
      room -= take;
      return take;
    }

    @Override
    public int read(java.nio.ByteBuffer dst, long position) {
      if (position >= cache.length) {
        return -1;
      }
      int n = (int) Math.min(dst.remaining(), cache.length - position);
      dst.put(cache, (int) position, n);
      return n;
    }

    @Override
    public long size() {
      return cache.length;
    }

    @Override
    public java.nio.channels.FileChannel truncate(long size) {
      if (size < cache.length) {
        cache = java.util.Arrays.copyOf(cache, (int) size);
      }
      return this;
    }

    @Override
    public void force(boolean metaData) throws java.io.IOException {
      if (failForce) {
        failForce = false;
        throw new java.io.IOException("Input/output error: " + path);
      }
      disk = cache.clone();
    }

    @Override
    public int read(java.nio.ByteBuffer dst) {
      throw new UnsupportedOperationException("positional reads only");
    }

    @Override
    public long read(java.nio.ByteBuffer[] dsts, int offset, int length) {
      throw new UnsupportedOperationException("positional reads only");
    }

    @Override
    public int write(java.nio.ByteBuffer src) {
      throw new UnsupportedOperationException("positional writes only");
    }

    @Override
    public long write(java.nio.ByteBuffer[] srcs, int offset, int length) {
      throw new UnsupportedOperationException("positional writes only");
    }

    @Override
    public long position() {
      throw new UnsupportedOperationException("positional access only");
    }

    @Override
    public java.nio.channels.FileChannel position(long newPosition) {
      throw new UnsupportedOperationException("positional access only");
    }

    @Override
    public long transferTo(long position, long count, java.nio.channels.WritableByteChannel t) {
      throw new UnsupportedOperationException();
    }

    @Override
    public long transferFrom(java.nio.channels.ReadableByteChannel s, long position, long count) {
      throw new UnsupportedOperationException();
    }

    @Override
    public java.nio.MappedByteBuffer map(MapMode mode, long position, long size) {
      throw new UnsupportedOperationException();
    }

    @Override
    public java.nio.channels.FileLock lock(long position, long size, boolean shared) {
      throw new UnsupportedOperationException();
    }

    @Override
    public java.nio.channels.FileLock tryLock(long position, long size, boolean shared) {
      throw new UnsupportedOperationException();
    }

    @Override
    protected void implCloseChannel() {}
  }
}
