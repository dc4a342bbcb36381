package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * An RFC 9162 §2.1.3 inclusion proof (audit path, deepest sibling first) of leaf {@code leafIndex}
 * in the tree of the first {@code treeSize} leaves. Values are not checked here: a proof read from
 * the wire is judged by {@link MerkleVerifier}, which reports what is wrong instead of throwing.
 */
public record InclusionProof(long leafIndex, long treeSize, List<byte[]> path) {
  public InclusionProof {
    path = ProofPath.copy(path);
  }

  /** A copy of the audit path (the record's list holds arrays, which are mutable). */
  @Override
  public List<byte[]> path() {
    return ProofPath.copy(path);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof InclusionProof p
        && ProofPath.same(leafIndex, treeSize, path, p.leafIndex, p.treeSize, p.path);
  }

  @Override
  public int hashCode() {
    return ProofPath.hash(leafIndex, treeSize, path);
  }

  @Override
  public String toString() {
    return ProofPath.text("InclusionProof", "leafIndex", leafIndex, "treeSize", treeSize, path);
  }

  /** The wire form of WIRE.md §2.10: {@code {"leaf_index","tree_size","path":[hex...]}}. */
  public ObjectNode toJson() {
    return ProofPath.json("leaf_index", leafIndex, "tree_size", treeSize, path);
  }

  /** Reads the §2.10 wire form strictly (32-byte lowercase hex path elements, no other fields). */
  public static InclusionProof fromJson(JsonNode json) {
    return ProofPath.read(json, "leaf_index", "tree_size", InclusionProof::new);
  }
}
