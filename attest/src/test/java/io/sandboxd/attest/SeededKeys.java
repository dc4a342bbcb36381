package io.sandboxd.attest;

import java.util.Arrays;

/** Signing keys from fixed seeds, so a test's principals and vectors are the same on every run. */
public final class SeededKeys {
  private SeededKeys() {}

  /** The 32-byte seed that counts up from {@code first}: first, first + 1, ... */
  public static byte[] countingSeed(int first) {
    byte[] seed = new byte[32];
    for (int i = 0; i < seed.length; i++) {
      seed[i] = (byte) (first + i);
    }
    return seed;
  }

  /** The key whose seed is {@link #countingSeed(int) countingSeed(first)}. */
  public static SigningKey counting(int first) {
    return SigningKey.fromSeed(countingSeed(first));
  }

  /** The key whose 32-byte seed is {@code b} throughout. */
  public static SigningKey filled(int b) {
    byte[] seed = new byte[32];
    Arrays.fill(seed, (byte) b);
    return SigningKey.fromSeed(seed);
  }
}
