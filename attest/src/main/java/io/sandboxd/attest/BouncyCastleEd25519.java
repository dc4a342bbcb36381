package io.sandboxd.attest;

import org.bouncycastle.math.ec.rfc8032.Ed25519;

/** Ed25519 signing in BouncyCastle's Java: the engine every JVM has. */
final class BouncyCastleEd25519 implements Ed25519Engine {
  static final BouncyCastleEd25519 INSTANCE = new BouncyCastleEd25519();

  private BouncyCastleEd25519() {}

  @Override
  public String name() {
    return "bouncycastle";
  }

  @Override
  public byte[] sign(byte[] secret, byte[] message) {
    byte[] signature = new byte[Ed25519.SIGNATURE_SIZE];
    // The public key is passed in, so the scalar multiplication that derives it is not redone.
    Ed25519.sign(secret, 0, secret, 32, message, 0, message.length, signature, 0);
    return signature;
  }

  @Override
  public String toString() {
    return name();
  }
}
