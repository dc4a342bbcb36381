package io.sandboxd.enforcer;

/** The mode of a storage operation; each mode has its own allow-glob list. */
public enum PathMode {
  READ,
  WRITE,
  DELETE;

  /** The lowercase spelling used in grants and query lines. */
  public String jsonName() {
    return LowercaseName.of(this);
  }

  /** Parses the lowercase spelling; throws {@link IllegalArgumentException} otherwise. */
  public static PathMode fromJson(String text) {
    return LowercaseName.parse(values(), text, "path mode");
  }
}
