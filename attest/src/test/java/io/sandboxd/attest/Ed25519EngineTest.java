package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BinaryOperator;
import org.junit.jupiter.api.Test;

/**
 * The two Ed25519 engines give the same signatures: libsodium (bin/test installs libsodium23) and
 * BouncyCastle, on RFC 8032's vectors and on seeded keys and messages; a library that signs
 * otherwise, or is missing, is refused.
 */
class Ed25519EngineTest {
  private static Ed25519Engine sodium() {
    try {
      return Ed25519Engine.libsodium();
    } catch (AttestException e) {
      throw new AssertionError(
          "libsodium is needed here (Debian: libsodium23, which bin/test installs): "
              + e.getMessage(),
          e);
    }
  }

  @Test
  void bothEnginesSignRfc8032sVectors() {
    byte[] test2 = {0x72};
    for (Ed25519Engine engine : List.of(Ed25519Engine.bouncyCastle(), sodium())) {
      SigningKey k1 = SigningTest.T1.key().signingWith(engine);
      SigningKey k2 = SigningTest.T2.key().signingWith(engine);
      assertSame(engine, k1.engine());
      assertEquals(SigningTest.T1.signatureHex(), Hex.encode(k1.sign(new byte[0])), engine.name());
      assertEquals(SigningTest.T2.signatureHex(), Hex.encode(k2.sign(test2)), engine.name());
      assertEquals(SigningTest.T1.publicHex(), k1.publicKey().hex());
    }
  }

  @Test
  void libsodiumSignsAsBouncyCastleDoesForSeededKeysAndMessages() {
    Ed25519Engine sodium = sodium();
    assertEquals("libsodium", sodium.name());
    Seeded.repeat(
        300,
        g -> {
          byte[] seed = new byte[32];
          g.random().nextBytes(seed);
          // SHA-512 blocks are 128 bytes: lengths at and around block edges, and long ones.
          int length = (int) g.longBetween(0, g.random().nextBoolean() ? 300 : 70_000);
          byte[] message = new byte[length];
          g.random().nextBytes(message);
          SigningKey key = SigningKey.fromSeed(seed);
          byte[] expected = key.sign(message);
          byte[] got = key.signingWith(sodium).sign(message);
          assertArrayEquals(expected, got, "length " + length);
          assertTrue(key.publicKey().verify(message, got));
        });
  }

  @Test
  void libsodiumSignsFromManyThreadsAtOnce() throws Exception {
    SigningKey bc = SigningKey.fromSeed(Blake3.hash(new byte[] {9}));
    SigningKey sodium = bc.signingWith(sodium());
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<Boolean>> same = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        int thread = t;
        same.add(
            pool.submit(
                () -> {
                  for (int i = 0; i < 200; i++) {
                    byte[] m = Blake3.hash(new byte[] {(byte) thread, (byte) i});
                    if (!Arrays.equals(bc.sign(m), sodium.sign(m))) {
                      return false;
                    }
                  }
                  return true;
                }));
      }
      for (Future<Boolean> f : same) {
        assertTrue(f.get());
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aMissingLibraryIsRefusedNamingIt() {
    AttestException e =
        assertThrows(AttestException.class, () -> SodiumEd25519.load("sandboxd-no-such-library"));
    assertTrue(e.getMessage().contains("cannot load 'sandboxd-no-such-library'"), e.getMessage());
  }

  @Test
  void signingCodeThatAnswersOtherwiseIsRefused() {
    BinaryOperator<byte[]> right = Ed25519Engine.bouncyCastle()::sign;
    SodiumEd25519.requireKnownAnswers("right", right);
    // Wrong everywhere: one bit of every signature flipped.
    BinaryOperator<byte[]> flipped =
        (secret, message) -> {
          byte[] s = right.apply(secret, message);
          s[63] ^= 1;
          return s;
        };
    AttestException e =
        assertThrows(
            AttestException.class, () -> SodiumEd25519.requireKnownAnswers("flipped", flipped));
    assertTrue(e.getMessage().startsWith("flipped: signs a 0-byte"), e.getMessage());
    // Right for RFC 8032's short messages, wrong past one SHA-512 block (a message cut short).
    BinaryOperator<byte[]> truncating =
        (secret, message) ->
            right.apply(secret, Arrays.copyOf(message, Math.min(128, message.length)));
    e =
        assertThrows(
            AttestException.class,
            () -> SodiumEd25519.requireKnownAnswers("truncating", truncating));
    assertTrue(e.getMessage().startsWith("truncating: signs a 4099-byte"), e.getMessage());
    // The wrong key half: signs as if the public key were another's.
    BinaryOperator<byte[]> otherKey =
        (secret, message) -> {
          byte[] s = secret.clone();
          s[40] ^= 1;
          return right.apply(s, message);
        };
    assertThrows(
        AttestException.class, () -> SodiumEd25519.requireKnownAnswers("other key", otherKey));
  }

  @Test
  void aKeySigningThroughAnotherEngineIsTheSameKey() {
    SigningKey key = SigningKey.fromSeed(Blake3.hash(new byte[] {3}));
    SigningKey other = key.signingWith(sodium());
    assertEquals(key.publicKey(), other.publicKey());
    assertArrayEquals(key.seed(), other.seed());
    assertSame(Ed25519Engine.bouncyCastle(), key.engine());
    assertEquals(key.toString(), other.toString());
  }
}
