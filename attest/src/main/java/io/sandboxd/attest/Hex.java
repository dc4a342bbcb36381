package io.sandboxd.attest;

/** Lowercase hex, the one spelling of every address, key and signature in a signed record. */
public final class Hex {
  private static final char[] DIGITS = "0123456789abcdef".toCharArray();

  private Hex() {}

  public static String encode(byte[] bytes) {
    char[] out = new char[bytes.length * 2];
    for (int i = 0; i < bytes.length; i++) {
      out[2 * i] = DIGITS[(bytes[i] >> 4) & 0xf];
      out[2 * i + 1] = DIGITS[bytes[i] & 0xf];
    }
    return new String(out);
  }

  /**
   * Decodes lowercase hex of exactly {@code expectedBytes} bytes (or any even length if negative).
   * Uppercase and prefixed forms are refused so each value has one spelling (WIRE.md §2.0.2).
   */
  public static byte[] decode(String hex, int expectedBytes, String field) {
    if (hex == null) {
      throw new AttestException(field + ": missing hex value");
    }
    if (expectedBytes >= 0 && hex.length() != expectedBytes * 2) {
      throw new AttestException(
          field + ": expected " + (expectedBytes * 2) + " hex characters, got " + hex.length());
    }
    if (hex.length() % 2 != 0) {
      throw new AttestException(field + ": odd number of hex characters");
    }
    byte[] out = new byte[hex.length() / 2];
    for (int i = 0; i < hex.length(); i++) {
      int v = digit(hex.charAt(i));
      if (v < 0) {
        throw new AttestException(
            field + ": character " + i + " ('" + hex.charAt(i) + "') is not lowercase hex");
      }
      if (i % 2 == 0) {
        out[i / 2] = (byte) (v << 4);
      } else {
        out[i / 2] |= (byte) v;
      }
    }
    return out;
  }

  public static boolean isHex(String s, int bytes) {
    if (s == null || s.length() != bytes * 2) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      if (digit(s.charAt(i)) < 0) {
        return false;
      }
    }
    return true;
  }

  private static int digit(char c) {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    return -1;
  }
}
