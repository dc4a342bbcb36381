package io.sandboxd.attest;

import java.util.ArrayList;
import java.util.List;

/**
 * An RFC 9162 §2.1 merkle tree over a fixed list of leaves, with the hash pluggable: leaf =
 * HASH(0x00 ‖ data), node = HASH(0x01 ‖ left ‖ right), split at the largest power of two below n,
 * MTH(empty) = HASH(""). Builds roots for any prefix and inclusion and consistency proofs; proofs
 * are checked by {@link MerkleVerifier}.
 */
public final class MerkleTree {
  private final MerkleHash hash;

  /**
   * {@code levels.get(h)[i]} is the hash of the perfect subtree of 2^h leaves starting at leaf
   * i·2^h. Every left operand in the RFC's recursion is such a subtree, so any MTH(D[lo:hi]) costs
   * O(log n) node hashes instead of O(n).
   */
  private final List<byte[][]> levels;

  private MerkleTree(MerkleHash hash, byte[][] leafHashes) {
    this.hash = hash;
    this.levels = new ArrayList<>();
    byte[][] level = leafHashes;
    levels.add(level);
    while (level.length > 1) {
      byte[][] up = new byte[level.length / 2][];
      for (int i = 0; i < up.length; i++) {
        up[i] = hash.node(level[2 * i], level[2 * i + 1]);
      }
      levels.add(up);
      level = up;
    }
  }

  /** The tree whose leaves are {@code HASH(0x00 ‖ d)} for each entry d of {@code leafData}. */
  public static MerkleTree of(MerkleHash hash, List<byte[]> leafData) {
    byte[][] leaves = new byte[leafData.size()][];
    for (int i = 0; i < leaves.length; i++) {
      leaves[i] = hash.leaf(leafData.get(i));
    }
    return new MerkleTree(hash, leaves);
  }

  /** A BLAKE3-256 tree over {@code leafData}: the journal_root (§2.5) and fleet (§2.10) form. */
  public static MerkleTree blake3(List<byte[]> leafData) {
    return of(MerkleHash.blake3(), leafData);
  }

  public MerkleHash hash() {
    return hash;
  }

  /** The number of leaves. */
  public int size() {
    return levels.get(0).length;
  }

  /** The hash of leaf {@code index}, i.e. HASH(0x00 ‖ data) for trees built with {@link #of}. */
  public byte[] leafHash(int index) {
    checkIndex(index, size(), "leaf index");
    return levels.get(0)[index].clone();
  }

  /** MTH of all leaves; HASH("") when there are none. */
  public byte[] root() {
    return root(size());
  }

  /** MTH of the first {@code treeSize} leaves (an earlier version of an append-only log). */
  public byte[] root(int treeSize) {
    checkSize(treeSize);
    return LogTree.root(hash, this::node, treeSize).clone();
  }

  /** The size and root of the whole tree. */
  public TreeHead head() {
    return head(size());
  }

  /** The size and root of the first {@code treeSize} leaves. */
  public TreeHead head(int treeSize) {
    return new TreeHead(treeSize, root(treeSize));
  }

  /** The audit path of leaf {@code leafIndex} in the whole tree. */
  public InclusionProof inclusionProof(int leafIndex) {
    return inclusionProof(leafIndex, size());
  }

  /** The audit path PATH(m, D[0:treeSize]) of RFC 9162 §2.1.3.1. */
  public InclusionProof inclusionProof(int leafIndex, int treeSize) {
    checkSize(treeSize);
    checkIndex(leafIndex, treeSize, "leaf index");
    return LogTree.inclusionProof(hash, this::node, leafIndex, treeSize);
  }

  /** The consistency proof from the first {@code oldSize} leaves to the whole tree. */
  public ConsistencyProof consistencyProof(int oldSize) {
    return consistencyProof(oldSize, size());
  }

  /**
   * PROOF(m, D[0:newSize]) of RFC 9162 §2.1.4.1, for 0 < m ≤ newSize (empty when m = newSize). The
   * RFC defines no proof from the empty tree, and {@link MerkleVerifier} rejects one, so m = 0 is
   * refused unless newSize is 0 too.
   */
  public ConsistencyProof consistencyProof(int oldSize, int newSize) {
    checkSize(newSize);
    if (oldSize < 0 || oldSize > newSize) {
      throw new IllegalArgumentException(
          "old size " + oldSize + " outside [0, new size " + newSize + "]");
    }
    if (oldSize == 0 && newSize > 0) {
      throw new IllegalArgumentException(
          "RFC 9162 defines no consistency proof from the empty tree");
    }
    if (oldSize == 0) {
      return new ConsistencyProof(0, 0, List.of()); // the empty tree to itself: nothing to prove
    }
    return LogTree.consistencyProof(hash, this::node, oldSize, newSize);
  }

  /**
   * The largest power of two strictly below n (n ≥ 2), where RFC 9162 splits a tree of n leaves.
   */
  static long splitPoint(long n) {
    return Long.highestOneBit(n - 1);
  }

  /** The kept perfect subtree {@code index} at {@code level}, for {@link LogTree}'s recursion. */
  private byte[] node(int level, long index) {
    return levels.get(level)[Math.toIntExact(index)];
  }

  private void checkSize(int treeSize) {
    if (treeSize < 0 || treeSize > size()) {
      throw new IllegalArgumentException("tree size " + treeSize + " outside [0, " + size() + "]");
    }
  }

  private static void checkIndex(int index, int bound, String what) {
    if (index < 0 || index >= bound) {
      throw new IndexOutOfBoundsException(what + " " + index + " outside [0, " + bound + ")");
    }
  }
}
