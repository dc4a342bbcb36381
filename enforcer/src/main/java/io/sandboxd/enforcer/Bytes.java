package io.sandboxd.enforcer;

import io.sandboxd.attest.Hex;
import java.util.Arrays;

/** An immutable byte string (a kv key prefix), ordered by unsigned lexicographic comparison. */
public final class Bytes implements Comparable<Bytes> {
  private final byte[] bytes;

  private Bytes(byte[] bytes) {
    this.bytes = bytes;
  }

  /** A copy of {@code bytes}. */
  public static Bytes of(byte[] bytes) {
    return new Bytes(bytes.clone());
  }

  /** A copy of the bytes. */
  public byte[] toArray() {
    return bytes.clone();
  }

  /** Number of bytes. */
  public int length() {
    return bytes.length;
  }

  /** True when these bytes are a prefix of {@code key}. */
  public boolean isPrefixOf(byte[] key) {
    return key.length >= bytes.length
        && Arrays.equals(bytes, 0, bytes.length, key, 0, bytes.length);
  }

  /** Lowercase hex. */
  public String hex() {
    return Hex.encode(bytes);
  }

  @Override
  public int compareTo(Bytes o) {
    return Arrays.compareUnsigned(bytes, o.bytes);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Bytes b && Arrays.equals(b.bytes, bytes);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(bytes);
  }

  @Override
  public String toString() {
    return hex();
  }
}
