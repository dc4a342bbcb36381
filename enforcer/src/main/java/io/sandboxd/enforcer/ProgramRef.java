package io.sandboxd.enforcer;

import io.sandboxd.attest.Hex;

/**
 * One entry of a program allowlist or flow pattern (Q12): a plain program name, or {@code b3:<64
 * lowercase hex>} naming a binary by its BLAKE3 hash.
 */
public record ProgramRef(String text) implements Comparable<ProgramRef> {
  /** The prefix of a hash entry. */
  public static final String HASH_PREFIX = "b3:";

  public ProgramRef {
    if (text.startsWith(HASH_PREFIX)) {
      if (!Hex.isHex(text.substring(HASH_PREFIX.length()), 32)) {
        throw new IllegalArgumentException(
            "program \"" + text + "\": a hash entry is b3: followed by 64 lowercase hex");
      }
    } else if (text.isEmpty()
        || text.indexOf('/') >= 0
        || text.indexOf('\0') >= 0
        || text.equals(".")
        || text.equals("..")) {
      throw new IllegalArgumentException(
          "program \"" + text + "\": a name is a non-empty file name without '/' or NUL");
    }
  }

  /** True for a {@code b3:} entry. */
  public boolean isHash() {
    return text.startsWith(HASH_PREFIX);
  }

  /** The 64 hex of a hash entry. */
  public String hashHex() {
    return text.substring(HASH_PREFIX.length());
  }

  /** True when this entry names {@code step}: by name, or by the hash of its binary. */
  public boolean matches(ExecStep step) {
    if (isHash()) {
      return step.b3Hex().map(h -> h.equals(hashHex())).orElse(false);
    }
    return text.equals(step.name());
  }

  @Override
  public int compareTo(ProgramRef o) {
    return text.compareTo(o.text);
  }

  @Override
  public String toString() {
    return text;
  }
}
