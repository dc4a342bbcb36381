package io.sandboxd.enforcer;

import java.util.Locale;

/** The mode of a storage operation; each mode has its own allow-glob list. */
public enum PathMode {
  READ,
  WRITE,
  DELETE;

  /** The lowercase spelling used in grants and query lines. */
  public String jsonName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** Parses the lowercase spelling; throws {@link IllegalArgumentException} otherwise. */
  public static PathMode fromJson(String text) {
    for (PathMode m : values()) {
      if (m.jsonName().equals(text)) {
        return m;
      }
    }
    throw new IllegalArgumentException("unknown path mode \"" + text + "\"");
  }
}
