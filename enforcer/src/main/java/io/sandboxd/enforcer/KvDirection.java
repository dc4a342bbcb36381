package io.sandboxd.enforcer;

/** The direction of a key-value operation: a get reads, a put writes. */
public enum KvDirection {
  READ,
  WRITE;

  /** The lowercase spelling used in query lines. */
  public String jsonName() {
    return LowercaseName.of(this);
  }

  /** Parses the lowercase spelling; throws {@link IllegalArgumentException} otherwise. */
  public static KvDirection fromJson(String text) {
    return LowercaseName.parse(values(), text, "kv direction");
  }
}
