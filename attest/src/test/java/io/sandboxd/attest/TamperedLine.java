package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

/** An envelope's JSON line with one byte of its core changed, read back as a verifier reads it. */
final class TamperedLine {
  private TamperedLine() {}

  /**
   * {@code env}'s line with the core's byte at {@code position} (modulo the core's length) xored
   * with {@code xor}, then parsed and read as an envelope: empty when ingest refuses it.
   */
  static Optional<Envelope> of(Envelope env, int position, int xor) {
    String text = env.toJsonLine();
    byte[] line = text.getBytes(StandardCharsets.UTF_8);
    byte[] core = CanonicalJson.canonicalize(env.core());
    // The line starts {"address":"<hex>", so the index in the text is the index in the bytes.
    int start = text.indexOf("\"core\":") + 7;
    assertTrue(start >= 7);
    assertEquals(
        new String(core, StandardCharsets.UTF_8),
        new String(line, start, core.length, StandardCharsets.UTF_8));
    byte[] m = line.clone();
    m[start + position % core.length] ^= (byte) xor;
    try {
      return Optional.of(Envelope.fromJson(CanonicalJson.parse(m)));
    } catch (AttestException e) {
      return Optional.empty();
    }
  }
}
