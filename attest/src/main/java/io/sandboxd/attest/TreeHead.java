package io.sandboxd.attest;

import java.util.Arrays;

/**
 * A tree size and the root claimed for it, as a trusted source states them (the signed fleet
 * aggregate's {@code tree_size} and {@code root}, WIRE.md §2.10). Proofs are verified against a
 * head, not a bare root, because an RFC 9162 audit path alone does not fix the tree size: the path
 * of leaf 0 in a 3-leaf tree also walks to the same root when read as a 4-leaf tree.
 */
// The array component is copied in and out, and equals/hashCode/toString go by content.
@SuppressWarnings("ArrayRecordComponent")
public record TreeHead(long size, byte[] root) {
  public TreeHead {
    root = root == null ? null : root.clone();
  }

  /** A copy of the root (null when a caller passed none; verification then fails, not throws). */
  @Override
  public byte[] root() {
    return root == null ? null : root.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TreeHead h && h.size == size && Arrays.equals(h.root, root);
  }

  @Override
  public int hashCode() {
    return 31 * Long.hashCode(size) + Arrays.hashCode(root);
  }

  @Override
  public String toString() {
    return "TreeHead[size=" + size + ", root=" + (root == null ? "null" : Hex.encode(root)) + "]";
  }
}
