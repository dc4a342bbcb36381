package io.sandboxd.daemon.fleet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
}
