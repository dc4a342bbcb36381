package io.sandboxd.attest;

import java.security.SecureRandom;
import org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters;
import org.bouncycastle.crypto.signers.Ed25519Signer;

/** An Ed25519 private key (raw 32-byte seed); lives in the daemon only, never in an executor. */
public final class SigningKey {
  private final Ed25519PrivateKeyParameters params;
  private final PublicKey publicKey;

  private SigningKey(Ed25519PrivateKeyParameters params) {
    this.params = params;
    this.publicKey = PublicKey.ofRaw(params.generatePublicKey().getEncoded());
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
    return params.getEncoded();
  }

  /** Pure Ed25519 (RFC 8032) signature over {@code message}. */
  public byte[] sign(byte[] message) {
    Ed25519Signer s = new Ed25519Signer();
    s.init(true, params);
    s.update(message, 0, message.length);
    return s.generateSignature();
  }

  @Override
  public String toString() {
    return "SigningKey[public=" + publicKey.hex() + "]";
  }
}
