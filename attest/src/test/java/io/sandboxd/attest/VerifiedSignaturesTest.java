package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** Signatures made or verified once are checked again without Ed25519, with the same verdicts. */
class VerifiedSignaturesTest {
  private static final List<SigningKey> KEYS =
      List.of(SeededKeys.counting(1), SeededKeys.counting(40), SeededKeys.filled(7));

  private static ObjectNode core(Random r) {
    ObjectNode c = CanonicalJson.mapper().createObjectNode();
    c.put("schema", "sandbox.test/1");
    c.put("n", r.nextInt(1_000_000));
    c.put("text", Long.toHexString(r.nextLong()));
    return c;
  }

  /** An envelope signed outside {@link Envelope#sign}: as another process would have made it. */
  private static Envelope signedElsewhere(ObjectNode core, SigningKey key) {
    byte[] bytes = CanonicalJson.canonicalize(core);
    return envelope(core, Blake3.hex(bytes), Hex.encode(key.sign(bytes)), key.publicKey().hex());
  }

  private static Envelope envelope(ObjectNode core, String address, String sig, String key) {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.set("core", core);
    o.put("address", address);
    o.put("signature", sig);
    o.put("public_key", key);
    return Envelope.fromJson(o);
  }

  /** The verdict without the memo: the address, then Ed25519 over the core, then the signer. */
  private static boolean reference(Envelope e, Optional<PublicKey> expected) {
    byte[] bytes = CanonicalJson.canonicalize(e.core());
    if (!Blake3.hex(bytes).equals(e.address())) {
      return false;
    }
    PublicKey key;
    try {
      key = PublicKey.ofHex(e.publicKey(), "public_key");
    } catch (AttestException ex) {
      return false;
    }
    return key.verify(bytes, Hex.decode(e.signature(), 64, "signature"))
        && expected.map(key::equals).orElse(true);
  }

  @Test
  void aSignatureMadeHereIsCheckedAgainWithoutEd25519() {
    Envelope e = Envelope.sign(core(new Random(1)), KEYS.get(0));
    long before = VerifiedSignatures.verifications();
    assertTrue(e.verify(Optional.of(KEYS.get(0).publicKey())).isValid());
    assertTrue(e.verify(Optional.empty()).isValid());
    assertEquals(before, VerifiedSignatures.verifications());
  }

  @Test
  void aSignatureMadeElsewhereIsVerifiedOnceThenRemembered() {
    Envelope e = signedElsewhere(core(new Random(2)), KEYS.get(1));
    long before = VerifiedSignatures.verifications();
    assertTrue(e.verify(Optional.empty()).isValid());
    assertEquals(before + 1, VerifiedSignatures.verifications());
    assertTrue(e.verify(Optional.of(KEYS.get(1).publicKey())).isValid());
    assertEquals(before + 1, VerifiedSignatures.verifications());
  }

  @Test
  void anInvalidSignatureIsNeverRemembered() {
    Envelope good = Envelope.sign(core(new Random(3)), KEYS.get(2));
    char[] sig = good.signature().toCharArray();
    sig[5] = sig[5] == '0' ? '1' : '0';
    Envelope bad =
        envelope((ObjectNode) good.core(), good.address(), new String(sig), good.publicKey());
    long before = VerifiedSignatures.verifications();
    for (int i = 1; i <= 3; i++) {
      assertTrue(!bad.verify(Optional.empty()).isValid());
      assertEquals(before + i, VerifiedSignatures.verifications(), "verified in full every time");
    }
  }

  @Test
  void seededTamperingGetsTheSameVerdictAsFullVerification() {
    Random r = new Random(22);
    List<Envelope> seen = new ArrayList<>();
    int valid = 0;
    int invalid = 0;
    for (int i = 0; i < 400; i++) {
      SigningKey key = KEYS.get(r.nextInt(KEYS.size()));
      ObjectNode c = core(r);
      Envelope e = r.nextBoolean() ? Envelope.sign(c, key) : signedElsewhere(c, key);
      Envelope other = seen.isEmpty() ? e : seen.get(r.nextInt(seen.size()));
      seen.add(e);
      Envelope t =
          switch (r.nextInt(7)) {
            case 0 -> e; // untouched
            case 1 -> { // one signature bit flipped
              byte[] s = Hex.decode(e.signature(), 64, "s");
              s[r.nextInt(64)] ^= (byte) (1 << r.nextInt(8));
              yield envelope(c, e.address(), Hex.encode(s), e.publicKey());
            }
            case 2 -> envelope(c, e.address(), other.signature(), e.publicKey());
            case 3 -> { // another key named
              String k = KEYS.get(r.nextInt(KEYS.size())).publicKey().hex();
              yield envelope(c, e.address(), e.signature(), k);
            }
            case 4 -> { // the core changed, the address kept
              ObjectNode changed = c.deepCopy();
              changed.put("n", c.get("n").intValue() + 1);
              yield envelope(changed, e.address(), e.signature(), e.publicKey());
            }
            case 5 -> { // the core changed, the address recomputed, the old signature kept
              ObjectNode changed = c.deepCopy();
              changed.put("text", "x");
              String a = Blake3.hex(CanonicalJson.canonicalize(changed));
              yield envelope(changed, a, e.signature(), e.publicKey());
            }
            default -> { // another envelope's signature and key over this core
              yield envelope(c, e.address(), other.signature(), other.publicKey());
            }
          };
      Optional<PublicKey> expected =
          r.nextBoolean()
              ? Optional.empty()
              : Optional.of(KEYS.get(r.nextInt(KEYS.size())).publicKey());
      // Twice: the second check is the one a remembered signature would answer.
      for (int round = 0; round < 2; round++) {
        boolean want = reference(t, expected);
        assertEquals(want, t.verify(expected).isValid(), "case " + i + " round " + round);
        if (want) {
          valid++;
        } else {
          invalid++;
        }
      }
    }
    assertTrue(valid > 100 && invalid > 300, valid + " valid, " + invalid + " invalid");
  }

  @Test
  void theTableHoldsAFixedNumberOfSlotsWhateverIsRemembered() {
    byte[] key = new byte[32];
    byte[] sig = new byte[64];
    for (int i = 0; i < 3 * VerifiedSignatures.SLOTS; i++) {
      byte[] address = Blake3.hash(Integer.toString(i).getBytes(StandardCharsets.UTF_8));
      VerifiedSignatures.remember(key, address, sig);
    }
    // The newest entry is there; most of the first were overwritten (a miss costs a full check).
    byte[] last =
        Blake3.hash(
            Integer.toString(3 * VerifiedSignatures.SLOTS - 1).getBytes(StandardCharsets.UTF_8));
    assertTrue(VerifiedSignatures.known(key, last, sig));
    int kept = 0;
    for (int i = 0; i < 1000; i++) {
      byte[] address = Blake3.hash(Integer.toString(i).getBytes(StandardCharsets.UTF_8));
      if (VerifiedSignatures.known(key, address, sig)) {
        kept++;
      }
    }
    assertTrue(kept < 200, kept + " of the 1000 oldest still there");
  }

  @Test
  void aTableLessThanHalfFullKeepsNearlyEverything() {
    // A warm store re-checks runs whose signatures are all in the table; with one slot an entry,
    // entries that shared a slot pushed each other out, and ~17% were lost at this fill.
    Random r = new Random(22);
    byte[] key = new byte[32];
    r.nextBytes(key);
    int n = 100_000;
    List<byte[]> addresses = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      byte[] address = new byte[32];
      r.nextBytes(address);
      addresses.add(address);
      VerifiedSignatures.remember(key, address, address);
    }
    int kept = 0;
    for (byte[] address : addresses) {
      if (VerifiedSignatures.known(key, address, address)) {
        kept++;
      }
    }
    assertTrue(kept >= n * 99 / 100, kept + " of " + n + " still known");
  }

  @Test
  void aSignatureMadeOnOneThreadIsKnownOnAnother() throws Exception {
    // Each thread fingerprints with its own keyed digest: they must agree with each other, and a
    // digest must start afresh after every fingerprint (else the second lookup on a thread misses).
    ExecutorService signers = Executors.newFixedThreadPool(4);
    List<Future<Envelope>> made = new ArrayList<>();
    for (int i = 0; i < 32; i++) {
      int seed = 1000 + i;
      made.add(signers.submit(() -> Envelope.sign(core(new Random(seed)), KEYS.get(seed % 3))));
    }
    List<Envelope> envelopes = new ArrayList<>();
    for (Future<Envelope> f : made) {
      envelopes.add(f.get());
    }
    signers.shutdown();
    long before = VerifiedSignatures.verifications();
    for (int round = 0; round < 2; round++) {
      for (Envelope e : envelopes) {
        assertTrue(e.verify(Optional.empty()).isValid());
      }
    }
    // 32 entries in 2^18 slots: at most a rare overwrite costs a full verification, not 64 of them.
    long misses = VerifiedSignatures.verifications() - before;
    assertTrue(misses <= 2, misses + " of 64 checks needed Ed25519");
  }

  @Test
  void knownValidAnswersOnlyForTriplesMadeOrVerifiedHere() {
    Random r = new Random(41);
    for (int i = 0; i < 200; i++) {
      SigningKey key = KEYS.get(i % KEYS.size());
      byte[] raw = key.publicKey().raw();
      Envelope made = Envelope.sign(core(r), key);
      byte[] address = Hex.decode(made.address(), 32, "address");
      byte[] sig = Hex.decode(made.signature(), 64, "signature");
      assertTrue(Envelope.knownValid(raw, address, sig), "signed here");
      byte[] flipped = sig.clone();
      flipped[i % 64] ^= (byte) (1 << (i % 8));
      assertEquals(false, Envelope.knownValid(raw, address, flipped), "another signature");
      byte[] otherAddress = address.clone();
      otherAddress[i % 32] ^= 1;
      assertEquals(false, Envelope.knownValid(raw, otherAddress, sig), "another address");
      byte[] otherKey = KEYS.get((i + 1) % KEYS.size()).publicKey().raw();
      assertEquals(false, Envelope.knownValid(otherKey, address, sig), "another key");

      // Made elsewhere: unknown until verified here, then known; an invalid one never is.
      Envelope elsewhere = signedElsewhere(core(r), key);
      byte[] a2 = Hex.decode(elsewhere.address(), 32, "address");
      byte[] s2 = Hex.decode(elsewhere.signature(), 64, "signature");
      assertEquals(false, Envelope.knownValid(raw, a2, s2), "not seen yet");
      assertTrue(elsewhere.verify(Optional.empty()) instanceof Verification.Valid);
      assertTrue(Envelope.knownValid(raw, a2, s2), "verified here");
      Envelope forged =
          envelope(
              (ObjectNode) elsewhere.core(),
              elsewhere.address(),
              Hex.encode(flipped),
              elsewhere.publicKey());
      assertTrue(forged.verify(Optional.empty()) instanceof Verification.Invalid);
      assertEquals(false, Envelope.knownValid(raw, a2, flipped), "an invalid one");
    }
  }
}
