package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The C2SP signed-note and tlog-checkpoint codec: round trips, strict parsing, typed refusals. */
class LogCheckpointTest {
  static final SigningKey KEY = SeededKeys.filled(1);
  static final SigningKey OTHER = SeededKeys.filled(2);
  static final String ORIGIN = "sandboxd/node-a-0011223344556677";

  static LogCheckpoint checkpoint(long size) {
    return new LogCheckpoint(ORIGIN, size, Blake3.hash(("root " + size).getBytes()));
  }

  @Test
  void signedCheckpointHasTheC2spShapeAndVerifies() {
    LogCheckpoint cp = checkpoint(20852163);
    String note = cp.sign(KEY);
    String[] lines = note.split("\n", -1);
    assertEquals(ORIGIN, lines[0]);
    assertEquals("20852163", lines[1]);
    assertArrayEquals(cp.root(), Base64.getDecoder().decode(lines[2]));
    assertEquals("", lines[3]);
    assertTrue(lines[4].startsWith("\u2014 " + ORIGIN + " "));
    assertEquals("", lines[5]);
    byte[] sig = Base64.getDecoder().decode(lines[4].substring(lines[4].lastIndexOf(' ') + 1));
    assertEquals(68, sig.length);
    // key ID = SHA-256(name ‖ 0x0A ‖ 0x01 ‖ key)[:4], recomputed here independently.
    byte[] idInput = (ORIGIN + "\n\u0001").getBytes(StandardCharsets.ISO_8859_1);
    byte[] withKey = new byte[idInput.length + 32];
    System.arraycopy(idInput, 0, withKey, 0, idInput.length);
    System.arraycopy(KEY.publicKey().raw(), 0, withKey, idInput.length, 32);
    byte[] h = sha256(withKey);
    assertArrayEquals(java.util.Arrays.copyOf(h, 4), java.util.Arrays.copyOf(sig, 4));
    byte[] ed = java.util.Arrays.copyOfRange(sig, 4, 68);
    assertTrue(KEY.publicKey().verify(cp.body().getBytes(StandardCharsets.UTF_8), ed));

    assertEquals(cp, LogCheckpoint.verify(note, LogCheckpoint.verifier(ORIGIN, KEY.publicKey())));
    assertEquals(cp, LogCheckpoint.verify(note, KEY.publicKey(), Optional.empty()));
    assertEquals(cp, LogCheckpoint.verify(note, KEY.publicKey(), Optional.of(ORIGIN)));
  }

  @Test
  void emptyTreeAndLargestSizeRoundTrip() {
    for (long n : new long[] {0, 1, Long.MAX_VALUE}) {
      LogCheckpoint cp = checkpoint(n);
      assertEquals(cp, LogCheckpoint.verify(cp.sign(KEY), KEY.publicKey(), Optional.empty()));
    }
  }

  @Test
  void unknownKeyIsRefused() {
    String note = checkpoint(5).sign(OTHER);
    NoteException e =
        assertThrows(
            NoteException.class,
            () -> LogCheckpoint.verify(note, KEY.publicKey(), Optional.empty()));
    assertEquals(NoteException.Reason.UNKNOWN_KEY, e.reason());
    assertTrue(e.getMessage().contains(ORIGIN), e.getMessage());
  }

  @Test
  void signatureUnderAnotherNameIsUnknownAndWrongOriginIsNamed() {
    LogCheckpoint cp = checkpoint(5);
    String underOther = SignedNote.sign(cp.body(), "other.example/log", KEY).encode();
    assertEquals(
        NoteException.Reason.UNKNOWN_KEY,
        assertThrows(
                NoteException.class,
                () -> LogCheckpoint.verify(underOther, KEY.publicKey(), Optional.empty()))
            .reason());
    // Verified under the name it was signed with, the origin line still must name that log.
    NoteException e =
        assertThrows(
            NoteException.class,
            () ->
                LogCheckpoint.verify(
                    underOther, new NoteVerifier("other.example/log", KEY.publicKey())));
    assertEquals(NoteException.Reason.WRONG_ORIGIN, e.reason());
  }

  @Test
  void knownKeyWithBadSignatureRefusesTheNote() {
    LogCheckpoint cp = checkpoint(7);
    SignedNote good = SignedNote.parse(cp.sign(KEY));
    SignedNote.Signature s = good.signatures().get(0);
    byte[] bad = s.signature();
    bad[10] ^= 1;
    String forged =
        new SignedNote(good.text(), List.of(new SignedNote.Signature(s.keyName(), s.keyId(), bad)))
            .encode();
    assertEquals(
        NoteException.Reason.BAD_SIGNATURE,
        assertThrows(
                NoteException.class,
                () -> LogCheckpoint.verify(forged, KEY.publicKey(), Optional.empty()))
            .reason());
  }

  @Test
  void unknownSignaturesAreIgnoredNextToAKnownOne() {
    LogCheckpoint cp = checkpoint(9);
    SignedNote mine = SignedNote.parse(cp.sign(KEY));
    SignedNote witness = SignedNote.sign(cp.body(), "witness.example/w1", OTHER);
    String both =
        new SignedNote(cp.body(), List.of(witness.signatures().get(0), mine.signatures().get(0)))
            .encode();
    assertEquals(cp, LogCheckpoint.verify(both, KEY.publicKey(), Optional.empty()));
  }

  @Test
  void everyOneByteMutationIsRefused() {
    String note = checkpoint(1234567).sign(KEY);
    byte[] b = note.getBytes(StandardCharsets.UTF_8);
    Seeded.repeat(
        1,
        g -> {
          for (int i = 0; i < b.length; i++) {
            for (int flip : new int[] {1, 0x20, 0x80, g.random().nextInt(255) + 1}) {
              byte[] m = b.clone();
              m[i] ^= (byte) flip;
              String text = new String(m, StandardCharsets.ISO_8859_1);
              try {
                LogCheckpoint cp =
                    LogCheckpoint.verify(
                        SignedNote.parse(m).encode(), KEY.publicKey(), Optional.of(ORIGIN));
                throw new AssertionError("byte " + i + " ^ " + flip + " verified: " + cp + text);
              } catch (NoteException expected) {
                assertNotEquals(null, expected.reason());
              }
            }
          }
        });
  }

  @Test
  void malformedNotesAreRefusedNamingTheFault() {
    String good = checkpoint(3).sign(KEY);
    String sigLine = good.substring(good.indexOf('\u2014'));
    String body = checkpoint(3).body();
    String[][] cases = {
      {good.substring(0, good.length() - 1), "does not end with a newline"},
      {body + sigLine, "no blank line"},
      {body + "\n", "no signature lines"},
      {body + "\n" + sigLine.replace("\u2014 ", "- "), "em dash"},
      {body + "\n" + sigLine.replace("=\n", "\n"), "canonical padded"},
      {body + "\n" + sigLine.replace(" ", "\t"), "control character"},
      {body.replace("\n3\n", "\n03\n") + "\n" + sigLine, "leading zeros"},
      {body.replace("\n3\n", "\n-3\n") + "\n" + sigLine, "tree size"},
      {body.replace("\n3\n", "\n99999999999999999999\n") + "\n" + sigLine, "tree size"},
      {ORIGIN + "\n3\n\n" + sigLine, "needs 3"},
      {ORIGIN + "\n3\nAAAA\n\n" + sigLine, "expected 32"},
      {ORIGIN + " x\n3\n" + body.split("\n")[2] + "\n\n" + sigLine, "origin"},
      {"\n\n" + sigLine, "empty"},
      {body + "\n\u2014 " + ORIGIN + " AAAA\n", "key ID and more"},
    };
    for (String[] c : cases) {
      NoteException e =
          assertThrows(
              NoteException.class,
              () -> LogCheckpoint.verify(c[0], KEY.publicKey(), Optional.of(ORIGIN)),
              c[1]);
      assertEquals(NoteException.Reason.MALFORMED, e.reason(), c[1] + ": " + e.getMessage());
      assertTrue(e.getMessage().contains(c[1]), c[1] + " not in: " + e.getMessage());
    }
    byte[] notUtf8 = good.getBytes(StandardCharsets.UTF_8);
    notUtf8[2] = (byte) 0xff;
    assertTrue(
        assertThrows(NoteException.class, () -> SignedNote.parse(notUtf8))
            .getMessage()
            .contains("UTF-8"));
  }

  @Test
  void verifierKeyTextRoundTrips() {
    NoteVerifier v = LogCheckpoint.verifier(ORIGIN, KEY.publicKey());
    String vkey = v.vkey();
    assertTrue(vkey.startsWith(ORIGIN + "+"), vkey);
    assertEquals(v, NoteVerifier.ofVkey(vkey));
    String wrongId = ORIGIN + "+00000000+" + vkey.substring(vkey.lastIndexOf('+') + 1);
    assertEquals(
        NoteException.Reason.MALFORMED,
        assertThrows(NoteException.class, () -> NoteVerifier.ofVkey(wrongId)).reason());
  }

  private static byte[] sha256(byte[] in) {
    try {
      return java.security.MessageDigest.getInstance("SHA-256").digest(in);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }
}
