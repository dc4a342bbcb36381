package io.sandboxd.attest;

import java.security.SecureRandom;
import java.util.Arrays;
import org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters;

/** An Ed25519 private key (raw 32-byte seed); lives in the daemon only, never in an executor. */
public final class SigningKey {
  private final PublicKey publicKey;
  // The seed then the public key: what either engine signs with, derived once.
  private final byte[] secret;
  private final Ed25519Engine engine;

  private SigningKey(Ed25519PrivateKeyParameters params) {
    byte[] pk = params.generatePublicKey().getEncoded();
    this.publicKey = PublicKey.ofRaw(pk);
    this.secret = new byte[64];
    params.encode(secret, 0);
    System.arraycopy(pk, 0, secret, 32, 32);
    this.engine = Ed25519Engine.bouncyCastle();
  }

  private SigningKey(SigningKey key, Ed25519Engine engine) {
    this.publicKey = key.publicKey;
    this.secret = key.secret;
    this.engine = engine;
  }

  public static SigningKey generate() {
    return new SigningKey(new Ed25519PrivateKeyParameters(new SecureRandom()));
  }

  public static SigningKey fromSeed(byte[] seed) {
    if (seed.length != 32) {
      throw new AttestException("private key: expected 32 bytes, got " + seed.length);
    }
    return new SigningKey(new Ed25519PrivateKeyParameters(seed, 0));
  }

  public PublicKey publicKey() {
    return publicKey;
  }

  /** The 32-byte seed, for writing a key file. */
  byte[] seed() {
    return Arrays.copyOf(secret, 32);
  }

  /** The same key, its signatures computed by {@code engine} (the same bytes, in other time). */
  public SigningKey signingWith(Ed25519Engine engine) {
    return new SigningKey(this, engine);
  }

  /** What computes this key's signatures. */
  public Ed25519Engine engine() {
    return engine;
  }

  /** The seed then the public key, for an engine's known-answer check. */
  byte[] secret() {
    return secret.clone();
  }

  /** Pure Ed25519 (RFC 8032) signature over {@code message}. */
  public byte[] sign(byte[] message) {
    return engine.sign(secret, message);
  }

  @Override
  public String toString() {
    return "SigningKey[public=" + publicKey.hex() + "]";
  }
}
