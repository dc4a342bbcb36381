package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Runs the RFC 9162 inclusion and consistency vectors in vectors/merkle (SHA-256, base64 fields,
 * {@code wantErr}) through {@link MerkleVerifier}, and checks that {@link MerkleTree} generates the
 * same proofs for the happy paths.
 */
class MerkleVectorsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final MerkleVerifier SHA256 = new MerkleVerifier(MerkleHash.sha256());

  /**
   * The eight leaves of the RFC 6962 / Certificate Transparency reference test data; the vectors'
   * roots for sizes 1..8 are the roots of these leaves' prefixes.
   */
  private static final List<byte[]> CT_LEAVES =
      List.of(
          hex(""),
          hex("00"),
          hex("10"),
          hex("2021"),
          hex("3031"),
          hex("40414243"),
          hex("5051525354555657"),
          hex("606162636465666768696a6b6c6d6e6f"));

  /** One vector file, parsed. */
  private record Vector(Path file, JsonNode json) {
    String name() {
      Path base = VectorFiles.dir("merkle");
      return base.relativize(file) + " (" + json.path("desc").asText() + ")";
    }

    boolean wantErr() {
      return json.get("wantErr").booleanValue();
    }

    byte[] bytes(String field) {
      return Base64.getDecoder().decode(json.get(field).textValue());
    }

    /** A u64 field as Java's unsigned-long bit pattern (2^64−1 becomes −1, which is rejected). */
    long num(String field) {
      return u64(json.get(field).bigIntegerValue());
    }

    BigInteger big(String field) {
      return json.get(field).bigIntegerValue();
    }

    List<byte[]> proof() {
      List<byte[]> out = new ArrayList<>();
      JsonNode p = json.get("proof");
      if (p != null && !p.isNull()) {
        p.forEach(e -> out.add(Base64.getDecoder().decode(e.textValue())));
      }
      return out;
    }
  }

  @TestFactory
  Stream<DynamicTest> inclusion() {
    List<Vector> cases = load("merkle/inclusion");
    return judged(cases, v -> verifyInclusion(v.num("leafIdx"), v.num("treeSize"), v));
  }

  @TestFactory
  Stream<DynamicTest> consistency() {
    List<Vector> cases = load("merkle/consistency");
    return judged(cases, v -> verifyConsistency(v.num("size1"), v.num("size2"), v));
  }

  /**
   * subtreeinclusion: inclusion of leaf {@code leafIdx} in the subtree of leaves [start, end),
   * whose hash is MTH(D[start:end]). That is RFC 9162 inclusion of index leafIdx−start in a tree of
   * end−start leaves, so every case maps onto {@link MerkleVerifier#verifyInclusion}; a negative
   * difference (leaf left of the subtree, start &gt; end) reaches the verifier as a negative index
   * or size, which it rejects.
   */
  @TestFactory
  Stream<DynamicTest> subtreeInclusion() {
    List<Vector> cases = load("merkle/subtreeinclusion");
    return judged(
        cases,
        v -> {
          BigInteger start = v.big("start");
          long index = u64(v.big("leafIdx").subtract(start));
          long size = u64(v.big("end").subtract(start));
          return verifyInclusion(index, size, v);
        });
  }

  /**
   * subtreeconsistency with start = 0 and a non-empty subtree is exactly RFC 9162 consistency from
   * size {@code end} to size {@code size}. The other cases are outside RFC 9162 and not run: start
   * &gt; 0 needs the subtree-consistency algorithm of the Merkle Tree Certificates draft, and an
   * empty subtree is declared consistent with any tree (root2 arbitrary), which contradicts RFC
   * 9162's equal-size rule that consistency/additional tests
   * (roots-do-not-match-and-sizes-are-zero).
   */
  @TestFactory
  Stream<DynamicTest> subtreeConsistencyFromZero() {
    List<Vector> all = load("merkle/subtreeconsistency");
    Predicate<Vector> rfc9162 = v -> v.num("start") == 0 && v.num("end") > 0;
    List<Vector> cases = all.stream().filter(rfc9162).toList();
    assertFalse(cases.isEmpty(), "no RFC 9162-shaped subtreeconsistency cases");
    System.out.printf(
        "subtreeconsistency: %d of %d cases are RFC 9162 (start=0, end>0)%n",
        cases.size(), all.size());
    return judged(cases, v -> verifyConsistency(v.num("end"), v.num("size"), v));
  }

  /** The excluded subtreeconsistency cases are only the two non-RFC shapes named above. */
  @Test
  void subtreeConsistencyExclusionsAreOnlyNonRfcShapes() {
    List<Vector> excluded =
        load("merkle/subtreeconsistency").stream()
            .filter(v -> !(v.num("start") == 0 && v.num("end") > 0))
            .toList();
    for (Vector v : excluded) {
      boolean emptySubtree = v.num("start") == v.num("end");
      boolean offset = v.num("start") > 0;
      assertTrue(emptySubtree || offset, v.name());
    }
    System.out.printf("subtreeconsistency: %d cases outside RFC 9162 not run%n", excluded.size());
  }

  /** Happy-path vectors whose roots are the CT leaves' roots: MerkleTree builds the same proofs. */
  @Test
  void generatedProofsEqualVectorProofs() {
    MerkleTree tree = MerkleTree.of(MerkleHash.sha256(), CT_LEAVES);
    int matched = 0;
    for (Vector v : happyPaths("merkle/inclusion")) {
      int size = (int) v.num("treeSize");
      int index = (int) v.num("leafIdx");
      if (ctRoot(tree, size, v, "root")
          && Arrays.equals(tree.leafHash(index), v.bytes("leafHash"))) {
        assertEquals(
            new InclusionProof(index, size, v.proof()), tree.inclusionProof(index, size), v.name());
        matched++;
      }
    }
    for (Vector v : happyPaths("merkle/consistency")) {
      int m = (int) v.num("size1");
      int n = (int) v.num("size2");
      if (ctRoot(tree, n, v, "root2") && ctRoot(tree, m, v, "root1")) {
        assertEquals(new ConsistencyProof(m, n, v.proof()), tree.consistencyProof(m, n), v.name());
        matched++;
      }
    }
    // inclusion/{0..4} and consistency/{0..4} happy paths all use the CT leaves.
    assertTrue(matched >= 10, "only " + matched + " happy paths matched the CT leaves");
    System.out.printf("merkle: %d generated proofs equal the vectors' proofs%n", matched);
  }

  /** The vectors under {@code dir} that want no error. */
  private static List<Vector> happyPaths(String dir) {
    return load(dir).stream().filter(v -> !v.wantErr()).toList();
  }

  /** Whether the vector's root {@code field} is the root of the first {@code size} CT leaves. */
  private static boolean ctRoot(MerkleTree tree, int size, Vector v, String field) {
    return size <= CT_LEAVES.size() && Arrays.equals(tree.root(size), v.bytes(field));
  }

  @Test
  void ctLeavesGiveTheWellKnownRoot() {
    assertArrayEquals(
        hex("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"),
        MerkleTree.of(MerkleHash.sha256(), CT_LEAVES).root());
    assertArrayEquals(
        hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        MerkleTree.of(MerkleHash.sha256(), List.of()).root());
  }

  /** A vector case's verdict from the verifier. */
  private interface CaseCheck {
    ProofCheck of(Vector v) throws Exception;
  }

  /** One test per case: {@code check}'s verdict is valid exactly when the case wants no error. */
  private static Stream<DynamicTest> judged(List<Vector> cases, CaseCheck check) {
    return cases.stream()
        .map(
            v ->
                DynamicTest.dynamicTest(
                    v.name(),
                    () -> {
                      ProofCheck verdict = check.of(v);
                      assertEquals(
                          !v.wantErr(), verdict.isValid(), () -> v.name() + ": " + verdict);
                    }));
  }

  private static ProofCheck verifyInclusion(long index, long size, Vector v) {
    return SHA256.verifyInclusion(
        new InclusionProof(index, size, v.proof()),
        v.bytes("leafHash"),
        new TreeHead(size, v.bytes("root")));
  }

  private static ProofCheck verifyConsistency(long size1, long size2, Vector v) {
    return SHA256.verifyConsistency(
        new ConsistencyProof(size1, size2, v.proof()),
        new TreeHead(size1, v.bytes("root1")),
        new TreeHead(size2, v.bytes("root2")));
  }

  private static List<Vector> load(String dir) {
    List<Vector> out = new ArrayList<>();
    for (Path f : VectorFiles.files(VectorFiles.dir(dir), ".json")) {
      try {
        out.add(new Vector(f, JSON.readTree(f.toFile())));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    assertFalse(out.isEmpty(), "no vectors under " + dir);
    System.out.printf("%s: %d vector files%n", dir, out.size());
    return out;
  }

  /**
   * Narrows a vector integer to a long: u64 values of 2^63 and above keep their bit pattern (so
   * they arrive negative, and the verifier rejects them as out of range); a difference below zero
   * stays negative. Anything wider than 64 bits cannot occur in these vectors.
   */
  private static long u64(BigInteger b) {
    if (b.bitLength() > 64 || (b.signum() < 0 && b.bitLength() > 63)) {
      throw new AssertionError("vector integer " + b + " does not fit 64 bits");
    }
    return b.longValue();
  }

  private static byte[] hex(String s) {
    return s.isEmpty() ? new byte[0] : HexFormat.of().parseHex(s);
  }
}
