package io.sandboxd.enforcer;

import java.util.Locale;

/** A host service a unit may call, gated by the matching {@link HostGrant} flag. */
public enum HostService {
  LOGGING,
  CLOCK,
  RANDOM,
  INFERENCE;

  /** The lowercase spelling used in grants and query lines. */
  public String jsonName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** Parses the lowercase spelling; throws {@link IllegalArgumentException} otherwise. */
  public static HostService fromJson(String text) {
    for (HostService s : values()) {
      if (s.jsonName().equals(text)) {
        return s;
      }
    }
    throw new IllegalArgumentException("unknown host service \"" + text + "\"");
  }
}
