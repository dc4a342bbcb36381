package io.sandboxd.attest;

/**
 * The hash function under a {@link MerkleTree} (RFC 9162 §2.1 with HASH pluggable): BLAKE3-256 in
 * sandboxd (WIRE.md §2.5, §2.10), SHA-256 to run the RFC's own vectors.
 */
public interface MerkleHash {
  /** Output length in bytes; every leaf hash and proof element must have exactly this length. */
  int size();

  /** HASH(input). */
  byte[] digest(byte[] input);

  /** The leaf hash {@code HASH(0x00 ‖ data)}. */
  default byte[] leaf(byte[] data) {
    byte[] in = new byte[1 + data.length];
    in[0] = 0x00;
    System.arraycopy(data, 0, in, 1, data.length);
    return digest(in);
  }

  /** The interior node hash {@code HASH(0x01 ‖ left ‖ right)}. */
  default byte[] node(byte[] left, byte[] right) {
    byte[] in = new byte[1 + left.length + right.length];
    in[0] = 0x01;
    System.arraycopy(left, 0, in, 1, left.length);
    System.arraycopy(right, 0, in, 1 + left.length, right.length);
    return digest(in);
  }

  /** The root of the empty tree, {@code HASH("")}. */
  default byte[] emptyRoot() {
    return digest(new byte[0]);
  }

  /** BLAKE3-256, the hash sandboxd's journal and fleet trees use. */
  static MerkleHash blake3() {
    return StandardMerkleHash.BLAKE3_256;
  }

  /** SHA-256, the hash of RFC 9162 itself (for cross-checking against its test vectors). */
  static MerkleHash sha256() {
    return StandardMerkleHash.SHA_256;
  }
}
