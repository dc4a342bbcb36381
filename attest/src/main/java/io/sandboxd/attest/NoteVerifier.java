package io.sandboxd.attest;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;

/**
 * A key a signed note may be signed by: a key name and an Ed25519 public key (C2SP signed-note,
 * signature type 0x01). Its key ID is {@code SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)[:4]}.
 */
public record NoteVerifier(String name, PublicKey key) {
  /** The signed-note signature type byte of Ed25519. */
  static final byte ED25519 = 0x01;

  public NoteVerifier {
    SignedNote.requireKeyName(name);
    if (key == null) {
      throw new NullPointerException("key");
    }
  }

  /** The 32-bit key ID carried in front of each signature by this key. */
  public int keyId() {
    try {
      MessageDigest d = MessageDigest.getInstance("SHA-256");
      d.update(name.getBytes(StandardCharsets.UTF_8));
      d.update((byte) 0x0A);
      d.update(ED25519);
      d.update(key.raw());
      byte[] h = d.digest();
      return ((h[0] & 0xff) << 24) | ((h[1] & 0xff) << 16) | ((h[2] & 0xff) << 8) | (h[3] & 0xff);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 unavailable", e);
    }
  }

  /**
   * The verifier key in the text form transparency-log tools exchange: {@code name+<key ID, 8
   * hex>+base64(0x01 ‖ public key)}.
   */
  public String vkey() {
    byte[] typed = new byte[33];
    typed[0] = ED25519;
    System.arraycopy(key.raw(), 0, typed, 1, 32);
    return name
        + "+"
        + String.format("%08x", keyId())
        + "+"
        + Base64.getEncoder().encodeToString(typed);
  }

  /** Reads the {@link #vkey()} form strictly; the key ID must match the name and key. */
  public static NoteVerifier ofVkey(String vkey) {
    String[] parts = vkey == null ? new String[0] : vkey.split("\\+", -1);
    if (parts.length != 3) {
      throw new NoteException(
          NoteException.Reason.MALFORMED, "verifier key: expected name+keyid+key");
    }
    if (!parts[1].matches("[0-9a-f]{8}")) {
      throw new NoteException(
          NoteException.Reason.MALFORMED, "verifier key: key ID is not 8 lowercase hex digits");
    }
    byte[] typed = SignedNote.base64(parts[2], "verifier key");
    if (typed.length != 33 || typed[0] != ED25519) {
      throw new NoteException(
          NoteException.Reason.MALFORMED, "verifier key: not an Ed25519 (type 0x01) key");
    }
    byte[] raw = new byte[32];
    System.arraycopy(typed, 1, raw, 0, 32);
    NoteVerifier v = new NoteVerifier(parts[0], PublicKey.ofRaw(raw));
    if (v.keyId() != Integer.parseUnsignedInt(parts[1], 16)) {
      throw new NoteException(
          NoteException.Reason.MALFORMED, "verifier key: key ID does not match name and key");
    }
    return v;
  }
}
