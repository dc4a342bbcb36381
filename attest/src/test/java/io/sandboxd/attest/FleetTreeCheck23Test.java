package io.sandboxd.attest;

import static io.sandboxd.attest.MerkleTreePropertiesTest.assertFailure;
import static io.sandboxd.attest.MerkleTreePropertiesTest.assertValid;
import static io.sandboxd.attest.MerkleTreePropertiesTest.prefixed;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** WIRE.md §5 check 23 (fleet, C10) and the §2.10 tree rules, spelled out. */
class FleetTreeCheck23Test {
  private static final MerkleVerifier VERIFIER = MerkleVerifier.blake3();

  @Test
  void everyIndexVerifiesForSizesOneToEight() {
    int proofs = 0;
    for (int size = 1; size <= 8; size++) {
      List<byte[]> addrs = MerkleTreePropertiesTest.leafData(size);
      MerkleTree tree = MerkleTree.blake3(addrs);
      for (int i = 0; i < size; i++) {
        // leaf_i = BLAKE3(0x00 ‖ addr_i), computed here without MerkleHash.
        byte[] leaf = Blake3.hash(prefixed((byte) 0, addrs.get(i)));
        assertArrayEquals(leaf, tree.leafHash(i));
        assertValid(VERIFIER.verifyInclusion(tree.inclusionProof(i), leaf, tree.head()));
        proofs++;
      }
    }
    assertEquals(36, proofs);
  }

  @Test
  void wrongTreeSizeOrLeafIndexFails() {
    for (int size = 1; size <= 8; size++) {
      MerkleTree tree = MerkleTree.blake3(MerkleTreePropertiesTest.leafData(size));
      MerkleTree nine = MerkleTree.blake3(MerkleTreePropertiesTest.leafData(9));
      for (int i = 0; i < size; i++) {
        InclusionProof p = tree.inclusionProof(i);
        byte[] leaf = tree.leafHash(i);
        for (long wrongSize : new long[] {size - 1, size + 1}) {
          InclusionProof relabelled = new InclusionProof(i, wrongSize, p.path());
          assertFailure(
              ProofCheck.Failure.TREE_SIZE,
              VERIFIER.verifyInclusion(relabelled, leaf, tree.head()));
          if (i < wrongSize) {
            assertFalse(
                VERIFIER.verifyInclusion(relabelled, leaf, nine.head((int) wrongSize)).isValid());
          }
        }
        for (long wrongIndex = -1; wrongIndex <= size; wrongIndex++) {
          if (wrongIndex != i) {
            InclusionProof moved = new InclusionProof(wrongIndex, size, p.path());
            assertFalse(VERIFIER.verifyInclusion(moved, leaf, tree.head()).isValid());
          }
        }
      }
    }
  }

  @Test
  void sizeOneRootIsTheLeafAndEmptyRootIsHashOfNothing() {
    byte[] addr0 = MerkleTreePropertiesTest.leafData(1).get(0);
    assertArrayEquals(
        Blake3.hash(prefixed((byte) 0, addr0)), MerkleTree.blake3(List.of(addr0)).root());
    assertArrayEquals(Blake3.hash(new byte[0]), MerkleTree.blake3(List.of()).root());
    assertTrue(MerkleTree.blake3(List.of(addr0)).inclusionProof(0).path().isEmpty());
  }

  @Test
  void twoLeavesHashAsNodeOfLeaves() {
    List<byte[]> addrs = MerkleTreePropertiesTest.leafData(3);
    byte[] l0 = Blake3.hash(prefixed((byte) 0, addrs.get(0)));
    byte[] l1 = Blake3.hash(prefixed((byte) 0, addrs.get(1)));
    byte[] l2 = Blake3.hash(prefixed((byte) 0, addrs.get(2)));
    byte[] n01 = Blake3.hash(prefixed((byte) 1, concat(l0, l1)));
    // Three leaves split at 2: the odd leaf is promoted, never duplicated (§2.10).
    byte[] root3 = Blake3.hash(prefixed((byte) 1, concat(n01, l2)));
    assertArrayEquals(n01, MerkleTree.blake3(addrs).root(2));
    assertArrayEquals(root3, MerkleTree.blake3(addrs).root());
  }

  /**
   * Why verification takes a {@link TreeHead}: RFC 9162's walk alone accepts the audit path of leaf
   * 0 in a 3-leaf tree relabelled as a 4-leaf tree, because both walks hash left-to-right twice.
   * Only comparing tree_size with the signed head's size catches the relabelling.
   */
  @Test
  void auditPathAloneDoesNotFixTreeSize() {
    MerkleTree tree = MerkleTree.blake3(MerkleTreePropertiesTest.leafData(3));
    InclusionProof p = tree.inclusionProof(0);
    InclusionProof relabelled = new InclusionProof(0, 4, p.path());
    byte[] leaf = tree.leafHash(0);
    assertValid(VERIFIER.verifyInclusion(relabelled, leaf, new TreeHead(4, tree.root())));
    assertFailure(
        ProofCheck.Failure.TREE_SIZE, VERIFIER.verifyInclusion(relabelled, leaf, tree.head()));
  }

  @Test
  void proofWireFormRoundTrips() {
    MerkleTree tree = MerkleTree.blake3(MerkleTreePropertiesTest.leafData(7));
    InclusionProof p = tree.inclusionProof(5);
    String json = CanonicalJson.canonicalString(p.toJson());
    assertTrue(json.startsWith("{\"leaf_index\":5,\"path\":[\""), json);
    InclusionProof back = InclusionProof.fromJson(CanonicalJson.parse(json));
    assertEquals(p, back);
    assertValid(VERIFIER.verifyInclusion(back, tree.leafHash(5), tree.head()));
  }

  @Test
  void malformedProofsAreReportedNotThrown() {
    MerkleTree tree = MerkleTree.blake3(MerkleTreePropertiesTest.leafData(5));
    byte[] leaf = tree.leafHash(2);
    List<byte[]> path = tree.inclusionProof(2).path();
    assertFailure(
        ProofCheck.Failure.PROOF_LENGTH,
        VERIFIER.verifyInclusion(new InclusionProof(2, 5, path.subList(0, 1)), leaf, tree.head()));
    assertFailure(
        ProofCheck.Failure.HASH_LENGTH,
        VERIFIER.verifyInclusion(
            new InclusionProof(2, 5, List.of(new byte[31], path.get(1), path.get(2))),
            leaf,
            tree.head()));
    assertFailure(
        ProofCheck.Failure.HASH_LENGTH,
        VERIFIER.verifyInclusion(tree.inclusionProof(2), new byte[0], tree.head()));
    assertFailure(
        ProofCheck.Failure.ROOT_MISMATCH,
        VERIFIER.verifyInclusion(tree.inclusionProof(2), leaf, new TreeHead(5, null)));
    assertFailure(
        ProofCheck.Failure.TREE_SIZE,
        VERIFIER.verifyConsistency(
            new ConsistencyProof(4, 3, List.of()), tree.head(4), tree.head(3)));
    assertFailure(
        ProofCheck.Failure.TREE_SIZE,
        VERIFIER.verifyConsistency(
            new ConsistencyProof(0, 5, List.of()), tree.head(0), tree.head()));
    assertFailure(
        ProofCheck.Failure.OLD_ROOT_MISMATCH,
        VERIFIER.verifyConsistency(
            tree.consistencyProof(3), new TreeHead(3, tree.root(2)), tree.head()));
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = new byte[a.length + b.length];
    System.arraycopy(a, 0, out, 0, a.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
