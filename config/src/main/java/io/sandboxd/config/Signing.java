package io.sandboxd.config;

import io.sandboxd.attest.JsonReader;
import java.util.Locale;
import java.util.Set;

/**
 * How the node computes its Ed25519 signatures (top-level {@code signing}). Every engine gives the
 * same bytes; the choice is speed against depending on a native library.
 *
 * @param ed25519 {@code ed25519}: {@code "auto"} (libsodium where it loads and signs the known
 *     answers, else BouncyCastle), {@code "libsodium"} (a start without it is refused), or {@code
 *     "bouncycastle"} (Java only)
 */
public record Signing(Engine ed25519) {
  /** The choices of {@code signing.ed25519}. */
  public enum Engine {
    AUTO,
    LIBSODIUM,
    BOUNCYCASTLE;

    /** The value as the configuration spells it. */
    public String spelling() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  public static Signing defaults() {
    return new Signing(Engine.AUTO);
  }

  /** Reads the {@code signing} section of {@code config}; an absent one reads as the defaults. */
  static Signing parse(JsonReader config) {
    JsonReader r = config.objectOrEmpty("signing", Set.of("ed25519"));
    String value = r.string("ed25519", defaults().ed25519().spelling());
    for (Engine e : Engine.values()) {
      if (e.spelling().equals(value)) {
        return new Signing(e);
      }
    }
    throw new ConfigException(
        r.pathOf("ed25519")
            + ": expected \"auto\", \"libsodium\" or \"bouncycastle\", got \""
            + value
            + "\"");
  }
}
