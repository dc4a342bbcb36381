package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Properties of {@link MerkleTree} and {@link MerkleVerifier} over BLAKE3-256: sizes 1..64 are
 * enumerated exhaustively, leaf contents are also drawn at random.
 */
class MerkleTreePropertiesTest {
  private static final MerkleVerifier VERIFIER = MerkleVerifier.blake3();

  static IntStream sizes1To64() {
    return IntStream.rangeClosed(1, 64);
  }

  static IntStream sizes2To64() {
    return IntStream.rangeClosed(2, 64);
  }

  static IntStream sizes0To64() {
    return IntStream.rangeClosed(0, 64);
  }

  @ParameterizedTest(name = "size {0}")
  @MethodSource("sizes1To64")
  void everyInclusionProofVerifies(int size) {
    MerkleTree tree = tree(size);
    for (int i = 0; i < size; i++) {
      InclusionProof proof = tree.inclusionProof(i);
      assertValid(VERIFIER.verifyInclusion(proof, tree.leafHash(i), tree.head()));
    }
  }

  @ParameterizedTest(name = "size {0}")
  @MethodSource("sizes1To64")
  void inclusionProofWithWrongTreeSizeFails(int size) {
    MerkleTree big = tree(65);
    MerkleTree tree = tree(size);
    for (int i = 0; i < size; i++) {
      List<byte[]> path = tree.inclusionProof(i).path();
      for (int other = 0; other <= 65; other++) {
        if (other == size) {
          continue;
        }
        InclusionProof relabelled = new InclusionProof(i, other, path);
        // Against the true head the size disagrees; against the head of a real tree of the
        // claimed size (same leaves, more or fewer of them) the path leads elsewhere.
        assertFailure(
            ProofCheck.Failure.TREE_SIZE,
            VERIFIER.verifyInclusion(relabelled, tree.leafHash(i), tree.head()));
        if (i < other) {
          assertFalse(
              VERIFIER.verifyInclusion(relabelled, tree.leafHash(i), big.head(other)).isValid(),
              "leaf " + i + " of " + size + " relabelled as size " + other);
        }
      }
    }
  }

  @ParameterizedTest(name = "size {0}")
  @MethodSource("sizes1To64")
  void inclusionProofWithWrongLeafIndexFails(int size) {
    MerkleTree tree = tree(size);
    for (int i = 0; i < size; i++) {
      List<byte[]> path = tree.inclusionProof(i).path();
      for (int other = -1; other <= size; other++) {
        if (other == i) {
          continue;
        }
        ProofCheck check =
            VERIFIER.verifyInclusion(
                new InclusionProof(other, size, path), tree.leafHash(i), tree.head());
        assertFalse(check.isValid(), "leaf " + i + " of " + size + " claimed as index " + other);
        if (other < 0 || other >= size) {
          assertFailure(ProofCheck.Failure.LEAF_INDEX, check);
        }
      }
    }
  }

  @ParameterizedTest(name = "size {0}")
  @MethodSource("sizes1To64")
  void consistencyProofsVerifyForAllOldSizes(int size) {
    MerkleTree tree = tree(size);
    for (int m = 1; m <= size; m++) {
      ConsistencyProof proof = tree.consistencyProof(m);
      assertValid(VERIFIER.verifyConsistency(proof, tree.head(m), tree.head()));
      if (m == size) {
        assertTrue(proof.path().isEmpty());
      }
    }
  }

  @ParameterizedTest(name = "size {0}")
  @MethodSource("sizes2To64")
  void tamperedConsistencyProofsFail(int size) {
    MerkleTree tree = tree(size);
    for (int m = 1; m < size; m++) {
      ConsistencyProof proof = tree.consistencyProof(m);
      List<byte[]> path = proof.path();
      for (int e = 0; e < path.size(); e++) {
        List<byte[]> bad = new ArrayList<>(path);
        bad.set(e, flipped(path.get(e), e));
        assertFalse(
            VERIFIER
                .verifyConsistency(new ConsistencyProof(m, size, bad), tree.head(m), tree.head())
                .isValid());
      }
      // An old root that is not the prefix's root (here: the prefix one leaf shorter or longer).
      assertFalse(VERIFIER.verifyConsistency(proof, tree.head(m - 1), tree.head()).isValid());
      assertFalse(
          VERIFIER
              .verifyConsistency(proof, new TreeHead(m, tree.root(m + 1)), tree.head())
              .isValid());
    }
  }

  /** Random leaf contents: proofs still verify and a changed leaf hash is caught. */
  @Test
  void proofsVerifyForArbitraryLeaves() {
    Seeded.repeat(
        200,
        g -> {
          List<byte[]> leaves = g.list(1, 64, () -> g.bytes(0, 48));
          int pick = g.intBetween(0, 63);
          int oldPick = g.intBetween(0, 63);
          MerkleTree tree = MerkleTree.blake3(leaves);
          int i = pick % leaves.size();
          int m = 1 + oldPick % leaves.size();
          byte[] leafHash = tree.leafHash(i);
          assertArrayEquals(Blake3.hash(prefixed((byte) 0, leaves.get(i))), leafHash);
          InclusionProof proof = tree.inclusionProof(i);
          assertValid(VERIFIER.verifyInclusion(proof, leafHash, tree.head()));
          assertFailure(
              ProofCheck.Failure.ROOT_MISMATCH,
              VERIFIER.verifyInclusion(proof, flipped(leafHash, pick), tree.head()));
          assertValid(
              VERIFIER.verifyConsistency(tree.consistencyProof(m), tree.head(m), tree.head()));
        });
  }

  /** The level-cached roots equal the RFC's recursive definition, for every prefix. */
  @ParameterizedTest(name = "size {0}")
  @MethodSource("sizes0To64")
  void rootsMatchTheRecursiveDefinition(int size) {
    for (MerkleHash h : List.of(MerkleHash.blake3(), MerkleHash.sha256())) {
      List<byte[]> data = leafData(size);
      MerkleTree tree = MerkleTree.of(h, data);
      for (int k = 0; k <= size; k++) {
        assertArrayEquals(reference(h, data.subList(0, k)), tree.root(k), "prefix " + k);
      }
    }
  }

  /** MTH written straight from RFC 9162 §2.1.1, independent of MerkleTree's level cache. */
  private static byte[] reference(MerkleHash h, List<byte[]> d) {
    if (d.isEmpty()) {
      return h.digest(new byte[0]);
    }
    if (d.size() == 1) {
      return h.digest(prefixed((byte) 0, d.get(0)));
    }
    int k = 1;
    while (k * 2 < d.size()) {
      k *= 2;
    }
    byte[] l = reference(h, d.subList(0, k));
    byte[] r = reference(h, d.subList(k, d.size()));
    byte[] both = new byte[l.length + r.length];
    System.arraycopy(l, 0, both, 0, l.length);
    System.arraycopy(r, 0, both, l.length, r.length);
    return h.digest(prefixed((byte) 1, both));
  }

  static MerkleTree tree(int size) {
    return MerkleTree.blake3(leafData(size));
  }

  /** 32-byte stand-ins for receipt addresses, distinct per index. */
  static List<byte[]> leafData(int size) {
    List<byte[]> out = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      out.add(Blake3.hash(ByteBuffer.allocate(4).putInt(i).array()));
    }
    return out;
  }

  static byte[] prefixed(byte prefix, byte[] data) {
    byte[] out = new byte[data.length + 1];
    out[0] = prefix;
    System.arraycopy(data, 0, out, 1, data.length);
    return out;
  }

  static byte[] flipped(byte[] h, int where) {
    byte[] out = h.clone();
    out[Math.floorMod(where, out.length)] ^= 0x01;
    return out;
  }

  static void assertValid(ProofCheck check) {
    assertTrue(check.isValid(), check::toString);
  }

  static void assertFailure(ProofCheck.Failure expected, ProofCheck check) {
    ProofCheck.Invalid invalid = assertInstanceOf(ProofCheck.Invalid.class, check);
    assertEquals(expected, invalid.failure(), invalid::detail);
  }
}
