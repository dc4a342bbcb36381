package io.sandboxd.attest;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/** The two built-in {@link MerkleHash} functions. */
enum StandardMerkleHash implements MerkleHash {
  BLAKE3_256 {
    @Override
    public byte[] digest(byte[] input) {
      return Blake3.hash(input);
    }
  },
  SHA_256 {
    @Override
    public byte[] digest(byte[] input) {
      try {
        // A fresh instance per call: MessageDigest is not thread-safe and trees may be shared.
        return MessageDigest.getInstance("SHA-256").digest(input);
      } catch (NoSuchAlgorithmException e) {
        // Every Java platform must provide SHA-256 (MessageDigest Javadoc).
        throw new IllegalStateException("SHA-256 unavailable", e);
      }
    }
  };

  @Override
  public int size() {
    return 32;
  }
}
