package io.sandboxd.enforcer;

import java.util.Locale;

/** The direction of a key-value operation: a get reads, a put writes. */
public enum KvDirection {
  READ,
  WRITE;

  /** The lowercase spelling used in query lines. */
  public String jsonName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** Parses the lowercase spelling; throws {@link IllegalArgumentException} otherwise. */
  public static KvDirection fromJson(String text) {
    for (KvDirection d : values()) {
      if (d.jsonName().equals(text)) {
        return d;
      }
    }
    throw new IllegalArgumentException("unknown kv direction \"" + text + "\"");
  }
}
