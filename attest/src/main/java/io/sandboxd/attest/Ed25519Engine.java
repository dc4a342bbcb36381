package io.sandboxd.attest;

/**
 * What computes a {@link SigningKey}'s pure Ed25519 signatures (RFC 8032): BouncyCastle's Java, or
 * libsodium's native code where the host has it. Ed25519 signing is deterministic, so both give the
 * same 64 bytes for the same key and message; only the time differs (about 34 and 18 us a hello
 * record here). Verification always goes through BouncyCastle, so what a node accepts never depends
 * on which library it found.
 */
public sealed interface Ed25519Engine permits BouncyCastleEd25519, SodiumEd25519 {
  /** The engine's name, as the daemon's log and {@code signing.ed25519} spell it. */
  String name();

  /**
   * The signature of {@code message} under {@code secret}: the 32-byte seed then the 32-byte public
   * key derived from it (libsodium's layout; BouncyCastle takes both halves too).
   */
  byte[] sign(byte[] secret, byte[] message);

  /** BouncyCastle's Ed25519: always there. */
  static Ed25519Engine bouncyCastle() {
    return BouncyCastleEd25519.INSTANCE;
  }

  /**
   * libsodium, once it has signed RFC 8032's known answers as BouncyCastle does; an {@link
   * AttestException} says why it cannot be used (not installed, or answers wrong).
   */
  static Ed25519Engine libsodium() {
    return SodiumEd25519.load("sodium");
  }
}
