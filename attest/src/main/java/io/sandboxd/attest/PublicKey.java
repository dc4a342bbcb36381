package io.sandboxd.attest;

import java.util.Arrays;
import org.bouncycastle.crypto.params.Ed25519PublicKeyParameters;
import org.bouncycastle.crypto.signers.Ed25519Signer;

/** An Ed25519 public key (raw 32 bytes), the identity a verifier checks signatures against. */
public final class PublicKey {
  private final byte[] raw;
  private final Ed25519PublicKeyParameters params;

  private PublicKey(byte[] raw) {
    this.raw = raw.clone();
    try {
      this.params = new Ed25519PublicKeyParameters(this.raw, 0);
    } catch (IllegalArgumentException e) {
      // BouncyCastle refuses bytes that do not decode to a curve point.
      throw new AttestException("public_key: not a valid Ed25519 public key", e);
    }
  }

  public static PublicKey ofRaw(byte[] raw) {
    if (raw.length != 32) {
      throw new AttestException("public_key: expected 32 bytes, got " + raw.length);
    }
    return new PublicKey(raw);
  }

  public static PublicKey ofHex(String hex, String field) {
    PublicKey known = DECODED.get(hex);
    if (known != null) {
      return known;
    }
    PublicKey key = ofRaw(Hex.decode(hex, 32, field));
    if (DECODED.size() >= DECODED_KEYS) {
      DECODED.clear(); // many keys at once (a hostile stream of them): no worse than no cache
    }
    DECODED.put(hex, key);
    return key;
  }

  // Keys decoded from hex lately: a node checks the same few keys (its own above all) over and
  // over, and decoding one (a point decompression) cost about a quarter of the store's check of a
  // run. A key is immutable, so one instance serves every caller. Only valid keys are kept.
  private static final int DECODED_KEYS = 64;
  private static final java.util.concurrent.ConcurrentHashMap<String, PublicKey> DECODED =
      new java.util.concurrent.ConcurrentHashMap<>();

  public byte[] raw() {
    return raw.clone();
  }

  public String hex() {
    return Hex.encode(raw);
  }

  /** RFC 8032 (pure Ed25519) verification of {@code signature} over {@code message}. */
  public boolean verify(byte[] message, byte[] signature) {
    if (signature.length != 64) {
      return false;
    }
    Ed25519Signer v = new Ed25519Signer();
    v.init(false, params);
    v.update(message, 0, message.length);
    return v.verifySignature(signature);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof PublicKey p && Arrays.equals(raw, p.raw);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(raw);
  }

  @Override
  public String toString() {
    return hex();
  }
}
