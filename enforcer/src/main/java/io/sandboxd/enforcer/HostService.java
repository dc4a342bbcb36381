package io.sandboxd.enforcer;

/** A host service a unit may call, gated by the matching {@link HostGrant} flag. */
public enum HostService {
  LOGGING,
  CLOCK,
  RANDOM,
  INFERENCE;

  /** The lowercase spelling used in grants and query lines. */
  public String jsonName() {
    return LowercaseName.of(this);
  }

  /** Parses the lowercase spelling; throws {@link IllegalArgumentException} otherwise. */
  public static HostService fromJson(String text) {
    return LowercaseName.parse(values(), text, "host service");
  }
}
