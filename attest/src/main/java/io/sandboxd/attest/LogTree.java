package io.sandboxd.attest;

import java.util.ArrayList;
import java.util.List;

/**
 * RFC 9162 roots and proofs of an append-only log whose perfect subtree hashes are kept (in a
 * store, not in memory): a proof at any size costs O(log n) reads of {@link Nodes} instead of
 * rehashing the leaves. Gives the same bytes as {@link MerkleTree} over the same leaves.
 */
public final class LogTree {
  private LogTree() {}

  /** The kept hashes: {@code node(h, i)} is MTH of leaves [i·2^h, (i+1)·2^h), all present. */
  @FunctionalInterface
  public interface Nodes {
    byte[] node(int level, long index);
  }

  /** A perfect subtree hash to keep: level, index at that level, hash. */
  // The array is the caller's to keep; the record is a carrier between the frontier and a store.
  @SuppressWarnings("ArrayRecordComponent")
  public record Node(int level, long index, byte[] hash) {}

  /** MTH of the first {@code size} leaves; HASH("") for none. */
  public static byte[] root(MerkleHash hash, Nodes nodes, long size) {
    if (size < 0) {
      throw new IllegalArgumentException("tree size " + size + " < 0");
    }
    return size == 0 ? hash.emptyRoot() : mth(hash, nodes, 0, size);
  }

  /** PATH(index, D[0:size]) of RFC 9162 §2.1.3.1. */
  public static InclusionProof inclusionProof(MerkleHash hash, Nodes nodes, long index, long size) {
    if (index < 0 || index >= size) {
      throw new IndexOutOfBoundsException("leaf index " + index + " outside [0, " + size + ")");
    }
    List<byte[]> path = new ArrayList<>();
    long m = index;
    long lo = 0;
    long hi = size;
    while (hi - lo > 1) {
      long k = MerkleTree.splitPoint(hi - lo);
      if (m < k) {
        path.add(mth(hash, nodes, lo + k, hi));
        hi = lo + k;
      } else {
        path.add(mth(hash, nodes, lo, lo + k));
        lo += k;
        m -= k;
      }
    }
    return new InclusionProof(index, size, reversed(path));
  }

  /** PROOF(m, D[0:n]) of RFC 9162 §2.1.4.1 for 0 &lt; m ≤ n. */
  public static ConsistencyProof consistencyProof(MerkleHash hash, Nodes nodes, long m, long n) {
    if (m <= 0 || m > n) {
      throw new IllegalArgumentException(
          "consistency needs 0 < old size <= new size, got " + m + " -> " + n);
    }
    List<byte[]> path = new ArrayList<>();
    long old = m;
    long lo = 0;
    long hi = n;
    boolean b = true;
    while (old != hi - lo) {
      long k = MerkleTree.splitPoint(hi - lo);
      if (old <= k) {
        path.add(mth(hash, nodes, lo + k, hi));
        hi = lo + k;
      } else {
        path.add(mth(hash, nodes, lo, lo + k));
        lo += k;
        old -= k;
        b = false;
      }
    }
    if (!b) {
      path.add(mth(hash, nodes, lo, hi));
    }
    return new ConsistencyProof(m, n, reversed(path));
  }

  /** MTH(D[lo:hi]), 0 ≤ lo &lt; hi: a kept node when perfect and aligned, else split. */
  static byte[] mth(MerkleHash hash, Nodes nodes, long lo, long hi) {
    long n = hi - lo;
    if (Long.bitCount(n) == 1 && lo % n == 0) {
      return nodes.node(Long.numberOfTrailingZeros(n), lo / n);
    }
    long k = MerkleTree.splitPoint(n);
    return hash.node(mth(hash, nodes, lo, lo + k), mth(hash, nodes, lo + k, hi));
  }

  private static List<byte[]> reversed(List<byte[]> path) {
    List<byte[]> out = new ArrayList<>(path.size());
    for (int i = path.size() - 1; i >= 0; i--) {
      out.add(path.get(i));
    }
    return out;
  }

  /**
   * The right frontier of the log: the roots of its perfect subtrees, largest first (one per set
   * bit of the size). An append costs O(log n) hashes and yields the perfect nodes it completes.
   */
  public static final class Frontier {
    private final MerkleHash hash;
    private final List<byte[]> roots; // roots.get(j) has level levels.get(j)
    private final List<Integer> levels;
    private long size;

    private Frontier(MerkleHash hash, long size, List<byte[]> roots, List<Integer> levels) {
      this.hash = hash;
      this.size = size;
      this.roots = roots;
      this.levels = levels;
    }

    /** An empty log's frontier. */
    public static Frontier empty(MerkleHash hash) {
      return new Frontier(hash, 0, new ArrayList<>(), new ArrayList<>());
    }

    /** The frontier of a log of {@code size} leaves whose kept nodes are {@code nodes}. */
    public static Frontier load(MerkleHash hash, Nodes nodes, long size) {
      List<byte[]> roots = new ArrayList<>();
      List<Integer> levels = new ArrayList<>();
      long start = 0;
      for (int h = 62; h >= 0; h--) {
        if ((size & (1L << h)) != 0) {
          roots.add(nodes.node(h, start >> h));
          levels.add(h);
          start += 1L << h;
        }
      }
      return new Frontier(hash, size, roots, levels);
    }

    public long size() {
      return size;
    }

    /** An independent copy (to restore after a rolled-back append). */
    public Frontier copy() {
      return new Frontier(hash, size, new ArrayList<>(roots), new ArrayList<>(levels));
    }

    /** Appends a leaf hash; returns the perfect nodes now complete (the leaf itself first). */
    public List<Node> append(byte[] leafHash) {
      List<Node> made = new ArrayList<>(2);
      byte[] h = leafHash.clone();
      int level = 0;
      long index = size;
      made.add(new Node(0, index, h));
      while (!levels.isEmpty() && levels.get(levels.size() - 1) == level) {
        byte[] left = roots.remove(roots.size() - 1);
        levels.remove(levels.size() - 1);
        h = hash.node(left, h);
        level++;
        index >>= 1;
        made.add(new Node(level, index, h));
      }
      roots.add(h);
      levels.add(level);
      size++;
      return made;
    }

    /** MTH of the log as it stands. */
    public byte[] root() {
      if (roots.isEmpty()) {
        return hash.emptyRoot();
      }
      byte[] r = roots.get(roots.size() - 1);
      for (int j = roots.size() - 2; j >= 0; j--) {
        r = hash.node(roots.get(j), r);
      }
      return r.clone();
    }

    public TreeHead head() {
      return new TreeHead(size, root());
    }
  }
}
