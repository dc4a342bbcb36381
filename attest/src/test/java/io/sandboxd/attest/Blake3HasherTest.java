package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** A hash taken in pieces, from a stream, is the one-shot hash; the copy is what was hashed. */
class Blake3HasherTest {
  @Test
  void aStreamHashesAndCopiesAsOneShotDoes() throws Exception {
    Random random = new Random(68);
    for (int round = 0; round < 40; round++) {
      byte[] input = new byte[random.nextInt(3 * 64 * 1024 + 7)];
      random.nextBytes(input);
      int split = input.length == 0 ? 0 : random.nextInt(input.length);
      Blake3.Hasher h = new Blake3.Hasher();
      h.update(input, 0, split);
      ByteArrayOutputStream copy = new ByteArrayOutputStream();
      long taken =
          h.update(
              new ByteArrayInputStream(input, split, input.length - split), copy, Long.MAX_VALUE);
      assertEquals(input.length - split, taken);
      assertEquals(Blake3.hex(input), h.hex(), "round " + round + ", " + input.length + " bytes");
      assertArrayEquals(
          java.util.Arrays.copyOfRange(input, split, input.length), copy.toByteArray());
    }
  }

  @Test
  void aStreamLongerThanItsBoundIsCutSoonAfter() throws Exception {
    byte[] input = new byte[1 << 20];
    long taken = new Blake3.Hasher().update(new ByteArrayInputStream(input), null, 100_000);
    assertTrue(taken > 100_000 && taken <= 100_000 + 64 * 1024, "took " + taken);
  }
}
