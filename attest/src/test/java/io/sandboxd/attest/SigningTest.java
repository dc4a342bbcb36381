package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/** Ed25519 (RFC 8032, pure) through {@link SigningKey} and {@link PublicKey}: WIRE.md §2.0.3. */
class SigningTest {
  /** One RFC 8032 §7.1 test case: the secret seed, public key and signature, in hex. */
  record Rfc8032(String secretHex, String publicHex, String signatureHex) {
    SigningKey key() {
      return SigningKey.fromSeed(Hex.decode(secretHex, 32, "secret"));
    }

    PublicKey publicKey() {
      return PublicKey.ofHex(publicHex, "pk");
    }

    byte[] signature() {
      return Hex.decode(signatureHex, 64, "sig");
    }
  }

  // RFC 8032 §7.1, TEST 1: empty message.
  static final Rfc8032 T1 =
      new Rfc8032(
          "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
          "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
          "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b");

  // RFC 8032 §7.1, TEST 2: one-byte message 0x72.
  static final Rfc8032 T2 =
      new Rfc8032(
          "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
          "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
          "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00");

  /** Group order of edwards25519 (RFC 8032 §5.1). */
  private static final BigInteger L =
      BigInteger.TWO.pow(252).add(new BigInteger("27742317777372353535851937790883648493"));

  @Test
  void rfc8032Test1PublicKeyIsDerivedFromTheSeed() {
    assertEquals(T1.publicHex(), T1.key().publicKey().hex());
  }

  @Test
  void rfc8032Test1SignatureIsByteExact() {
    byte[] sig = T1.key().sign(new byte[0]);
    assertEquals(64, sig.length);
    assertEquals(T1.signatureHex(), Hex.encode(sig));
  }

  @Test
  void rfc8032Test1SignatureVerifiesUnderThePublishedKey() {
    PublicKey pk = T1.publicKey();
    assertTrue(pk.verify(new byte[0], T1.signature()));
  }

  @Test
  void rfc8032Test2OneByteMessage() {
    SigningKey key = T2.key();
    byte[] msg = {0x72};
    assertEquals(T2.publicHex(), key.publicKey().hex());
    assertEquals(T2.signatureHex(), Hex.encode(key.sign(msg)));
    assertTrue(T2.publicKey().verify(msg, T2.signature()));
    // The TEST 1 signature is not a signature of TEST 2's message, nor under TEST 2's key.
    assertFalse(T2.publicKey().verify(new byte[0], T1.signature()));
  }

  @Test
  void signingIsDeterministic() {
    SigningKey key = T1.key();
    byte[] msg = "the same bytes".getBytes(StandardCharsets.UTF_8);
    assertArrayEquals(key.sign(msg), key.sign(msg));
  }

  @Test
  void signThenVerifyRoundTrips() {
    Seeded.repeat(
        200,
        g -> {
          byte[] message = g.bytes(0, 512);
          SigningKey key = SigningKey.generate();
          byte[] sig = key.sign(message);
          assertEquals(64, sig.length);
          assertTrue(key.publicKey().verify(message, sig));
          // A key rebuilt from its raw bytes verifies too.
          assertTrue(PublicKey.ofRaw(key.publicKey().raw()).verify(message, sig));
        });
  }

  @Test
  void aTamperedMessageFails() {
    Seeded.repeat(
        200,
        g -> {
          byte[] message = g.bytes(1, 256);
          int index = g.intBetween(0, 255);
          int xor = g.intBetween(1, 255);
          SigningKey key = T1.key();
          byte[] sig = key.sign(message);
          byte[] tampered = message.clone();
          tampered[index % tampered.length] ^= (byte) xor;
          assertFalse(key.publicKey().verify(tampered, sig));
        });
  }

  @Test
  void anExtendedOrTruncatedMessageFails() {
    SigningKey key = T1.key();
    byte[] msg = "receipt".getBytes(StandardCharsets.UTF_8);
    byte[] sig = key.sign(msg);
    assertFalse(key.publicKey().verify(Arrays.copyOf(msg, msg.length + 1), sig));
    assertFalse(key.publicKey().verify(Arrays.copyOf(msg, msg.length - 1), sig));
  }

  @Test
  void aTamperedSignatureFails() {
    Seeded.repeat(
        100,
        g -> {
          int index = g.intBetween(0, 63);
          int xor = g.intBetween(1, 255);
          byte[] sig = T1.signature();
          sig[index] ^= (byte) xor;
          assertFalse(T1.publicKey().verify(new byte[0], sig));
        });
  }

  @Test
  void wrongLengthSignaturesFailWithoutThrowing() {
    PublicKey pk = T1.publicKey();
    byte[] good = T1.signature();
    assertFalse(pk.verify(new byte[0], new byte[0]));
    assertFalse(pk.verify(new byte[0], Arrays.copyOf(good, 63)));
    assertFalse(pk.verify(new byte[0], Arrays.copyOf(good, 65)));
    assertFalse(pk.verify(new byte[0], Arrays.copyOf(good, 128)));
    assertFalse(pk.verify(new byte[0], new byte[64]));
  }

  @Test
  void aNonCanonicalScalarIsRefused() {
    // S + L encodes the same scalar mod L; RFC 8032 §5.1.7 requires S < L (no malleability).
    byte[] sig = T1.signature();
    byte[] sLe = Arrays.copyOfRange(sig, 32, 64);
    BigInteger s = new BigInteger(1, reverse(sLe));
    BigInteger bumped = s.add(L);
    assertTrue(bumped.bitLength() <= 256);
    byte[] be = bumped.toByteArray();
    byte[] le = new byte[32];
    for (int i = 0; i < 32 && i < be.length; i++) {
      le[i] = be[be.length - 1 - i];
    }
    byte[] malleated = sig.clone();
    System.arraycopy(le, 0, malleated, 32, 32);
    assertNotEquals(Hex.encode(sig), Hex.encode(malleated));
    assertFalse(T1.publicKey().verify(new byte[0], malleated));
  }

  @Test
  void anotherKeysSignatureFails() {
    Seeded.repeat(
        50,
        g -> {
          byte[] message = g.bytes(0, 128);
          SigningKey a = SigningKey.generate();
          SigningKey b = SigningKey.generate();
          assertNotEquals(a.publicKey(), b.publicKey());
          assertFalse(a.publicKey().verify(message, b.sign(message)));
          assertFalse(b.publicKey().verify(message, a.sign(message)));
        });
  }

  @Test
  void fromSeedRefusesWrongLengths() {
    AttestException e =
        assertThrows(AttestException.class, () -> SigningKey.fromSeed(new byte[31]));
    assertTrue(e.getMessage().contains("expected 32 bytes, got 31"), e.getMessage());
    assertThrows(AttestException.class, () -> SigningKey.fromSeed(new byte[33]));
    assertThrows(AttestException.class, () -> SigningKey.fromSeed(new byte[0]));
  }

  @Test
  void publicKeyRefusesWrongLengthsAndNonLowercaseHex() {
    AttestException e = assertThrows(AttestException.class, () -> PublicKey.ofRaw(new byte[31]));
    assertTrue(e.getMessage().contains("public_key"), e.getMessage());
    AttestException upper =
        assertThrows(
            AttestException.class,
            () -> PublicKey.ofHex(T1.publicHex().toUpperCase(Locale.ROOT), "host.key"));
    assertTrue(upper.getMessage().startsWith("host.key:"), upper.getMessage());
    AttestException shortHex =
        assertThrows(
            AttestException.class, () -> PublicKey.ofHex(T1.publicHex().substring(2), "host.key"));
    assertTrue(shortHex.getMessage().contains("expected 64 hex characters"), shortHex.getMessage());
  }

  @Test
  void bytesThatAreNotACurvePointAreAnAttestException() {
    byte[] bad = new byte[32];
    Arrays.fill(bad, (byte) 0xff);
    AttestException e = assertThrows(AttestException.class, () -> PublicKey.ofRaw(bad));
    assertTrue(e.getMessage().contains("public_key"), e.getMessage());
  }

  @Test
  void publicKeyValueSemantics() {
    PublicKey a = T1.publicKey();
    PublicKey b = PublicKey.ofRaw(Hex.decode(T1.publicHex(), 32, "pk"));
    assertEquals(a, b);
    assertEquals(a.hashCode(), b.hashCode());
    assertNotEquals(a, T2.publicKey());
    assertEquals(T1.publicHex(), a.toString());
    // raw() hands out a copy: changing it does not change the key.
    byte[] raw = a.raw();
    raw[0] ^= 1;
    assertEquals(T1.publicHex(), a.hex());
  }

  @Test
  void signingKeyToStringDoesNotLeakTheSeed() {
    String s = T1.key().toString();
    assertTrue(s.contains(T1.publicHex()), s);
    assertFalse(s.contains(T1.secretHex()), s);
    assertFalse(s.contains(T1.secretHex().substring(0, 16)), s);
  }

  @Test
  void seedRoundTripsThroughFromSeed() {
    SigningKey key = SigningKey.generate();
    SigningKey again = SigningKey.fromSeed(key.seed());
    assertEquals(key.publicKey(), again.publicKey());
    byte[] msg = {1, 2, 3};
    assertArrayEquals(key.sign(msg), again.sign(msg));
  }

  private static byte[] reverse(byte[] b) {
    byte[] r = new byte[b.length];
    for (int i = 0; i < b.length; i++) {
      r[i] = b[b.length - 1 - i];
    }
    return r;
  }

  @Test
  void keysDecodedFromHexAreSharedAndStillCheckedPastTheCacheBound() {
    String hex = SeededKeys.counting(3).publicKey().hex();
    assertTrue(PublicKey.ofHex(hex, "k") == PublicKey.ofHex(hex, "k"), "one decoded instance");
    // More distinct keys than are kept: each still decodes to itself.
    for (int i = 0; i < 200; i++) {
      PublicKey k = SeededKeys.counting(100 + i).publicKey();
      assertEquals(k, PublicKey.ofHex(k.hex(), "k"));
    }
    assertEquals(SeededKeys.counting(3).publicKey(), PublicKey.ofHex(hex, "k"));
    // Bad hex and a point off the curve are refused every time, never kept.
    for (int round = 0; round < 2; round++) {
      assertThrows(AttestException.class, () -> PublicKey.ofHex("zz", "k"));
      assertThrows(
          AttestException.class, () -> PublicKey.ofHex("02" + "00".repeat(30) + "80", "k"));
    }
  }
}
