package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * An RFC 9162 §2.1.4 consistency proof that the tree of the first {@code oldSize} leaves is a
 * prefix of the tree of the first {@code newSize}. Values are judged by {@link MerkleVerifier}.
 */
public record ConsistencyProof(long oldSize, long newSize, List<byte[]> path) {
  public ConsistencyProof {
    path = ProofPath.copy(path);
  }

  /** A copy of the proof hashes (the record's list holds arrays, which are mutable). */
  @Override
  public List<byte[]> path() {
    return ProofPath.copy(path);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ConsistencyProof p
        && ProofPath.same(oldSize, newSize, path, p.oldSize, p.newSize, p.path);
  }

  @Override
  public int hashCode() {
    return ProofPath.hash(oldSize, newSize, path);
  }

  @Override
  public String toString() {
    return ProofPath.text("ConsistencyProof", "oldSize", oldSize, "newSize", newSize, path);
  }

  /** The wire form: {@code {"old_size","new_size","path":[hex...]}}. */
  public ObjectNode toJson() {
    return ProofPath.json("old_size", oldSize, "new_size", newSize, path);
  }

  /** Reads the wire form strictly (32-byte lowercase hex path elements, no other fields). */
  public static ConsistencyProof fromJson(JsonNode json) {
    return ProofPath.read(json, "old_size", "new_size", ConsistencyProof::new);
  }
}
