package io.sandboxd.attest;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.util.Arrays;
import java.util.List;
import java.util.function.BinaryOperator;

/**
 * Ed25519 signing in libsodium (Debian: libsodium23), through JNA's direct mapping: about half the
 * time of BouncyCastle's on this project's machines. Taken only after it gives RFC 8032's answers
 * and BouncyCastle's for a longer message, so a library that signs differently is never used.
 */
final class SodiumEd25519 implements Ed25519Engine {
  private static final int SIGNATURE_BYTES = 64;

  /** A known answer: a seed, a message and the signature RFC 8032 §7.1 gives, all in hex. */
  private record Known(String seed, String message, String signature) {}

  // TEST 1 (the empty message) and TEST 3 (the two bytes af 82).
  private static final List<Known> KNOWN =
      List.of(
          new Known(
              "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
              "",
              "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e3970"
                  + "1cf9b46bd25bf5f0595bbe24655141438e7a100b"),
          new Known(
              "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
              "af82",
              "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760"
                  + "984dc6594a7c15e9716ed28dc027beceea1ec40a"));

  /** The C functions used, bound once to the library {@link #load} found. */
  private static final class Lib {
    static native int sodium_init();

    static native String sodium_version_string();

    static native int crypto_sign_detached(
        byte[] sig, Pointer siglen, byte[] m, long mlen, byte[] sk);
  }

  // The library Lib is bound to (JNA binds a class once); null until a load succeeds.
  private static String bound;

  private final String version;

  private SodiumEd25519(String version) {
    this.version = version;
  }

  /**
   * libsodium by its library name ({@code "sodium"}: JNA also finds {@code libsodium.so.23}),
   * checked against the known answers; refused, saying why, when it is missing or answers wrong.
   */
  static synchronized SodiumEd25519 load(String library) {
    NativeLibrary found;
    try {
      found = NativeLibrary.getInstance(library);
    } catch (LinkageError e) {
      throw new AttestException("libsodium: cannot load '" + library + "': " + e.getMessage(), e);
    }
    if (bound == null) {
      try {
        Native.register(Lib.class, found);
      } catch (LinkageError e) {
        throw new AttestException("libsodium: '" + library + "': " + e.getMessage(), e);
      }
      bound = library;
    } else if (!bound.equals(library)) {
      throw new AttestException(
          "libsodium: already bound to '" + bound + "', cannot bind '" + library + "'");
    }
    if (Lib.sodium_init() < 0) {
      throw new AttestException("libsodium: sodium_init failed");
    }
    SodiumEd25519 engine = new SodiumEd25519(Lib.sodium_version_string());
    requireKnownAnswers(engine.toString(), engine::sign);
    return engine;
  }

  /**
   * Refuses signing code ({@code sign}: secret, message to signature) whose signatures are not RFC
   * 8032's and, for a message of several SHA-512 blocks, BouncyCastle's.
   */
  static void requireKnownAnswers(String name, BinaryOperator<byte[]> sign) {
    for (Known known : KNOWN) {
      byte[] secret = SigningKey.fromSeed(Hex.decode(known.seed(), 32, "seed")).secret();
      byte[] message = Hex.decode(known.message(), -1, "message");
      requireSame(name, sign, Hex.decode(known.signature(), 64, "signature"), secret, message);
    }
    byte[] secret = SigningKey.fromSeed(Blake3.hash(new byte[] {1})).secret();
    byte[] message = new byte[4099];
    for (int i = 0; i < message.length; i++) {
      message[i] = (byte) (i * 31 + 7);
    }
    requireSame(name, sign, Ed25519Engine.bouncyCastle().sign(secret, message), secret, message);
  }

  private static void requireSame(
      String name, BinaryOperator<byte[]> sign, byte[] expected, byte[] secret, byte[] message) {
    byte[] got = sign.apply(secret, message);
    if (!Arrays.equals(expected, got)) {
      throw new AttestException(
          name
              + ": signs a "
              + message.length
              + "-byte known-answer message as "
              + Hex.encode(got)
              + ", expected "
              + Hex.encode(expected));
    }
  }

  /** The library's own version string. */
  String version() {
    return version;
  }

  @Override
  public String name() {
    return "libsodium";
  }

  @Override
  public byte[] sign(byte[] secret, byte[] message) {
    if (secret.length != 64) {
      throw new IllegalArgumentException("an Ed25519 secret is 64 bytes, got " + secret.length);
    }
    byte[] signature = new byte[SIGNATURE_BYTES];
    if (Lib.crypto_sign_detached(signature, null, message, message.length, secret) != 0) {
      throw new AttestException("libsodium: crypto_sign_detached failed");
    }
    return signature;
  }

  @Override
  public String toString() {
    return name() + " " + version;
  }
}
