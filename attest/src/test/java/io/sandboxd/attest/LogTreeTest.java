package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The incremental log tree (frontier appends, proofs from kept nodes) against the whole-list {@link
 * MerkleTree}, and issue 14's rule: for sizes 1..64 every index's proof verifies and every one-byte
 * change of leaf, path, root or size fails.
 */
class LogTreeTest {
  private static final MerkleHash H = MerkleHash.blake3();
  private static final MerkleVerifier V = MerkleVerifier.blake3();

  /** A log of {@code n} leaves built by appends, with the nodes a store would keep. */
  record Built(LogTree.Frontier frontier, Map<String, byte[]> kept, List<TreeHead> heads) {
    LogTree.Nodes nodes() {
      return (level, index) -> {
        byte[] h = kept.get(level + "/" + index);
        if (h == null) {
          throw new AssertionError("node " + level + "/" + index + " was never kept");
        }
        return h;
      };
    }
  }

  static Built build(List<byte[]> addrs) {
    LogTree.Frontier f = LogTree.Frontier.empty(H);
    Map<String, byte[]> kept = new HashMap<>();
    List<TreeHead> heads = new java.util.ArrayList<>();
    heads.add(f.head());
    for (byte[] a : addrs) {
      for (LogTree.Node n : f.append(H.leaf(a))) {
        kept.put(n.level() + "/" + n.index(), n.hash());
      }
      heads.add(f.head());
    }
    return new Built(f, kept, heads);
  }

  @Test
  void appendsAndKeptNodesGiveTheSameRootsAndProofsAsTheWholeTree() {
    List<byte[]> addrs = MerkleTreePropertiesTest.leafData(64);
    Built b = build(addrs);
    MerkleTree whole = MerkleTree.blake3(addrs);
    for (int n = 0; n <= 64; n++) {
      assertEquals(whole.head(n), b.heads().get(n), "head at " + n);
      assertArrayEquals(whole.root(n), LogTree.root(H, b.nodes(), n), "root at " + n);
      LogTree.Frontier reloaded = LogTree.Frontier.load(H, b.nodes(), n);
      assertEquals(whole.head(n), reloaded.head(), "reloaded frontier at " + n);
      for (int i = 0; i < n; i++) {
        assertEquals(whole.inclusionProof(i, n), LogTree.inclusionProof(H, b.nodes(), i, n));
      }
      for (int m = 1; m <= n; m++) {
        ConsistencyProof p = LogTree.consistencyProof(H, b.nodes(), m, n);
        assertEquals(whole.consistencyProof(m, n), p, m + " -> " + n);
        assertTrue(V.verifyConsistency(p, whole.head(m), whole.head(n)).isValid(), m + "->" + n);
      }
    }
    assertEquals(64, b.frontier().size());
  }

  @Test
  void everyIndexOfSizesOneToSixtyFourVerifiesAndEveryOneByteChangeFails() {
    List<byte[]> addrs = MerkleTreePropertiesTest.leafData(64);
    Built b = build(addrs);
    long proofs = 0;
    long mutations = 0;
    for (int n = 1; n <= 64; n++) {
      TreeHead head = b.heads().get(n);
      for (int i = 0; i < n; i++) {
        InclusionProof p = LogTree.inclusionProof(H, b.nodes(), i, n);
        byte[] leaf = H.leaf(addrs.get(i));
        assertTrue(V.verifyInclusion(p, leaf, head).isValid(), "size " + n + " index " + i);
        proofs++;
        // One byte of the leaf (the record address itself), of each path element, of the root.
        for (int at = 0; at < 32; at++) {
          byte[] addr = addrs.get(i).clone();
          addr[at] ^= 1;
          assertFalse(V.verifyInclusion(p, H.leaf(addr), head).isValid());
          byte[] root = head.root();
          root[at] ^= 1;
          assertFalse(V.verifyInclusion(p, leaf, new TreeHead(n, root)).isValid());
          mutations += 2;
          List<byte[]> path = p.path();
          for (int e = 0; e < path.size(); e++) {
            List<byte[]> changed = new java.util.ArrayList<>(p.path());
            changed.set(e, changed.get(e).clone());
            changed.get(e)[at] ^= 1;
            InclusionProof bad = new InclusionProof(i, n, changed);
            assertFalse(V.verifyInclusion(bad, leaf, head).isValid(), n + "/" + i + "/" + e);
            mutations++;
          }
        }
        // The same path offered for another tree size (head and proof agreeing) fails too.
        for (int other = Math.max(1, i + 1); other <= 64; other++) {
          if (other != n) {
            InclusionProof moved = new InclusionProof(i, other, p.path());
            assertFalse(V.verifyInclusion(moved, leaf, b.heads().get(other)).isValid());
          }
        }
      }
    }
    assertEquals(64 * 65 / 2, proofs);
    assertTrue(mutations > 100_000, "mutations " + mutations);
  }
}
