package io.sandboxd.attest;

import java.security.MessageDigest;
import java.util.List;

/**
 * Checks RFC 9162 inclusion (§2.1.3.2) and consistency (§2.1.4.2) proofs under one {@link
 * MerkleHash}. Never throws on a malformed proof: every defect comes back as a {@link
 * ProofCheck.Invalid} naming it.
 */
public final class MerkleVerifier {
  private final MerkleHash hash;

  public MerkleVerifier(MerkleHash hash) {
    this.hash = hash;
  }

  /** A verifier for sandboxd's BLAKE3-256 trees. */
  public static MerkleVerifier blake3() {
    return new MerkleVerifier(MerkleHash.blake3());
  }

  /**
   * Whether {@code proof} shows that {@code leafHash} is in the tree described by {@code head}: the
   * proof's tree_size must be the head's, then RFC 9162 §2.1.3.2 must walk to the head's root.
   */
  public ProofCheck verifyInclusion(InclusionProof proof, byte[] leafHash, TreeHead head) {
    long index = proof.leafIndex();
    long size = proof.treeSize();
    byte[] root = head.root();
    if (size != head.size()) {
      return invalid(
          ProofCheck.Failure.TREE_SIZE,
          "proof is for tree_size " + size + ", the tree head has " + head.size());
    }
    if (size < 0) {
      return invalid(ProofCheck.Failure.TREE_SIZE, "tree_size " + size + " is negative");
    }
    if (index < 0 || index >= size) {
      return invalid(
          ProofCheck.Failure.LEAF_INDEX,
          "leaf_index " + index + " outside [0, tree_size " + size + ")");
    }
    if (leafHash == null || leafHash.length != hash.size()) {
      return invalid(
          ProofCheck.Failure.HASH_LENGTH,
          "leaf hash has " + lengthOf(leafHash) + " bytes, expected " + hash.size());
    }
    List<byte[]> path = proof.path();
    ProofCheck bad = checkElements(path);
    if (bad != null) {
      return bad;
    }
    long expected = inclusionPathLength(index, size);
    if (path.size() != expected) {
      return invalid(
          ProofCheck.Failure.PROOF_LENGTH,
          "path has "
              + path.size()
              + " hashes, leaf "
              + index
              + " of a tree of "
              + size
              + " needs "
              + expected);
    }
    // A walk that runs longer than the tree is deep is unreachable after the length check; the
    // walk keeps the RFC's own guard all the same.
    return ended(walk(null, leafHash, index, size - 1, path, 0), "path", null, "root", root);
  }

  /**
   * Whether {@code proof} shows that the tree of {@code oldHead} is a prefix of the tree of {@code
   * newHead}. Equal sizes need an empty proof and equal roots (and, at size 0, the empty-tree
   * root); a proof from the empty tree to a larger one is rejected, as RFC 9162 §2.1.4 defines
   * consistency only for 0 &lt; old size.
   */
  public ProofCheck verifyConsistency(ConsistencyProof proof, TreeHead oldHead, TreeHead newHead) {
    long m = proof.oldSize();
    long n = proof.newSize();
    byte[] oldRoot = oldHead.root();
    byte[] newRoot = newHead.root();
    if (m != oldHead.size() || n != newHead.size()) {
      return invalid(
          ProofCheck.Failure.TREE_SIZE,
          "proof is for sizes "
              + m
              + " -> "
              + n
              + ", the tree heads have "
              + oldHead.size()
              + " -> "
              + newHead.size());
    }
    if (m < 0 || n < 0 || m > n) {
      return invalid(
          ProofCheck.Failure.TREE_SIZE,
          "sizes " + m + " -> " + n + ": need 0 <= old size <= new size");
    }
    List<byte[]> path = proof.path();
    ProofCheck bad = checkElements(path);
    if (bad != null) {
      return bad;
    }
    if (m == n) {
      if (!path.isEmpty()) {
        return invalid(
            ProofCheck.Failure.PROOF_LENGTH,
            "equal sizes need an empty proof, got " + path.size() + " hashes");
      }
      if (!same(oldRoot, newRoot)) {
        return invalid(
            ProofCheck.Failure.ROOT_MISMATCH,
            "equal sizes but roots differ: " + hexOf(oldRoot) + " vs " + hexOf(newRoot));
      }
      if (m == 0 && !same(oldRoot, hash.emptyRoot())) {
        return invalid(
            ProofCheck.Failure.OLD_ROOT_MISMATCH,
            "size 0 but root " + hexOf(oldRoot) + " is not HASH(\"\")");
      }
      return new ProofCheck.Valid();
    }
    if (m == 0) {
      return invalid(
          ProofCheck.Failure.TREE_SIZE,
          "RFC 9162 defines no consistency proof from the empty tree (old size 0)");
    }
    long expected = consistencyPathLength(m, n);
    if (path.size() != expected) {
      return invalid(
          ProofCheck.Failure.PROOF_LENGTH,
          "proof has " + path.size() + " hashes, sizes " + m + " -> " + n + " need " + expected);
    }
    if (oldRoot == null || newRoot == null) {
      return invalid(ProofCheck.Failure.ROOT_MISMATCH, "a root is missing");
    }
    // RFC 9162 §2.1.4.2 steps 2-7. When m is a power of two the old root is itself the first
    // node of the walk, so the RFC prepends it; here it simply seeds both of the walk's hashes.
    boolean powerOfTwo = Long.bitCount(m) == 1;
    int next = powerOfTwo ? 0 : 1;
    byte[] seed = powerOfTwo ? oldRoot : path.get(0);
    long fn = m - 1;
    long sn = n - 1;
    while ((fn & 1) == 1) {
      fn >>= 1;
      sn >>= 1;
    }
    return ended(walk(seed, seed, fn, sn, path, next), "proof", oldRoot, "new root", newRoot);
  }

  /**
   * The verdict on where a walk up {@code what} ("path" or "proof") ended: it must fit the tree's
   * depth, rebuild {@code oldRoot} from its left siblings unless that is null (an inclusion proof),
   * and rebuild {@code root} (called {@code rootName} in the detail) from all of them.
   */
  private static ProofCheck ended(
      Walk w, String what, byte[] oldRoot, String rootName, byte[] root) {
    if (w.depth() != null) {
      return invalid(
          ProofCheck.Failure.PROOF_LENGTH, what + " " + w.depth() + " than the tree is deep");
    }
    if (oldRoot != null && !same(w.left(), oldRoot)) {
      return invalid(
          ProofCheck.Failure.OLD_ROOT_MISMATCH,
          what + " leads to old root " + Hex.encode(w.left()) + ", expected " + hexOf(oldRoot));
    }
    if (!same(w.all(), root)) {
      return invalid(
          ProofCheck.Failure.ROOT_MISMATCH,
          what + " leads to " + rootName + " " + Hex.encode(w.all()) + ", expected " + hexOf(root));
    }
    return new ProofCheck.Valid();
  }

  /**
   * Where RFC 9162's walk up a proof ends: {@code left} hashed with the siblings on the left only
   * (the old root of §2.1.4.2's fr), {@code all} with every sibling (the root of §2.1.3.2's r and
   * §2.1.4.2's sr); {@code depth} is "longer" or "shorter" when the path does not fit the tree's
   * depth, else null.
   */
  // The arrays are hashes the verifier just made and compares; nothing else holds them.
  @SuppressWarnings("ArrayRecordComponent")
  private record Walk(byte[] left, byte[] all, String depth) {}

  /**
   * The walk shared by §2.1.3.2 (step 4) and §2.1.4.2 (step 6) from {@code path.get(from)} on, with
   * {@code fn} and {@code sn} as the RFC sets them; {@code left} is null when there is no old root
   * to rebuild (an inclusion proof).
   */
  private Walk walk(byte[] left, byte[] all, long fn, long sn, List<byte[]> path, int from) {
    byte[] fr = left;
    byte[] sr = all;
    for (int i = from; i < path.size(); i++) {
      byte[] c = path.get(i);
      if (sn == 0) {
        return new Walk(null, null, "longer");
      }
      if ((fn & 1) == 1 || fn == sn) {
        if (fr != null) {
          fr = hash.node(c, fr);
        }
        sr = hash.node(c, sr);
        while ((fn & 1) == 0 && fn != 0) {
          fn >>= 1;
          sn >>= 1;
        }
      } else {
        sr = hash.node(sr, c);
      }
      fn >>= 1;
      sn >>= 1;
    }
    return sn == 0 ? new Walk(fr, sr, null) : new Walk(null, null, "shorter");
  }

  /** Length of PATH(index, D[size]): one sibling per level the RFC recursion descends. */
  static long inclusionPathLength(long index, long size) {
    long len = 0;
    long m = index;
    long n = size;
    while (n > 1) {
      long k = MerkleTree.splitPoint(n);
      if (m < k) {
        n = k;
      } else {
        m -= k;
        n -= k;
      }
      len++;
    }
    return len;
  }

  /** Length of PROOF(m, D[n]) for 0 &lt; m &lt; n, following SUBPROOF's recursion on sizes only. */
  static long consistencyPathLength(long m, long n) {
    long len = 0;
    boolean b = true;
    long old = m;
    long size = n;
    while (old != size) {
      long k = MerkleTree.splitPoint(size);
      if (old <= k) {
        size = k;
      } else {
        old -= k;
        size -= k;
        b = false;
      }
      len++;
    }
    return b ? len : len + 1;
  }

  private ProofCheck checkElements(List<byte[]> path) {
    for (int i = 0; i < path.size(); i++) {
      if (path.get(i).length != hash.size()) {
        return invalid(
            ProofCheck.Failure.HASH_LENGTH,
            "proof element "
                + i
                + " has "
                + path.get(i).length
                + " bytes, expected "
                + hash.size());
      }
    }
    return null;
  }

  private static boolean same(byte[] a, byte[] b) {
    return a != null && b != null && MessageDigest.isEqual(a, b);
  }

  private static ProofCheck invalid(ProofCheck.Failure failure, String detail) {
    return new ProofCheck.Invalid(failure, detail);
  }

  private static String lengthOf(byte[] b) {
    return b == null ? "no" : Integer.toString(b.length);
  }

  private static String hexOf(byte[] b) {
    return b == null ? "(none)" : b.length == 0 ? "(empty)" : Hex.encode(b);
  }
}
