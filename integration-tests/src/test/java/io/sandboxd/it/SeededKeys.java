package io.sandboxd.it;

import io.sandboxd.attest.SigningKey;
import java.util.Arrays;

/** Signing keys from fixed seeds, so a test's principals are the same on every run. */
final class SeededKeys {
  private SeededKeys() {}

  /** The key whose seed counts up from {@code first}: first, first + 1, ... (32 bytes). */
  static SigningKey counting(int first) {
    byte[] seed = new byte[32];
    for (int i = 0; i < 32; i++) {
      seed[i] = (byte) (first + i);
    }
    return SigningKey.fromSeed(seed);
  }

  /** The key whose 32-byte seed is {@code b} throughout. */
  static SigningKey filled(int b) {
    byte[] seed = new byte[32];
    Arrays.fill(seed, (byte) b);
    return SigningKey.fromSeed(seed);
  }
}
