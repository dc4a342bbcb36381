package io.sandboxd.attest;

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
        && p.oldSize == oldSize
        && p.newSize == newSize
        && ProofPath.equal(p.path, path);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * Long.hashCode(oldSize) + Long.hashCode(newSize)) + ProofPath.hash(path);
  }

  @Override
  public String toString() {
    return "ConsistencyProof[oldSize="
        + oldSize
        + ", newSize="
        + newSize
        + ", path="
        + ProofPath.text(path)
        + "]";
  }
}
