package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The official BLAKE3 test vectors (vectors/blake3/test_vectors.json) in all three modes: the full
 * extended output, and its first 32 bytes against the default-length output.
 */
class Blake3VectorsTest {
  private static final HexFormat HEX = HexFormat.of();

  /** One mode of {@link Blake3}: input and output length to digest. */
  private interface Mode {
    byte[] apply(byte[] input, int outLen);
  }

  @TestFactory
  Stream<DynamicTest> officialVectors() throws IOException {
    JsonNode doc =
        new ObjectMapper()
            .readTree(VectorFiles.dir("blake3").resolve("test_vectors.json").toFile());
    byte[] key = doc.get("key").textValue().getBytes(StandardCharsets.US_ASCII);
    String context = doc.get("context_string").textValue();
    assertEquals(32, key.length);
    List<Object[]> modes =
        List.of(
            new Object[] {"hash", (Mode) Blake3::hash},
            new Object[] {"keyed_hash", (Mode) (in, n) -> Blake3.keyedHash(key, in, n)},
            new Object[] {"derive_key", (Mode) (in, n) -> Blake3.deriveKey(context, in, n)});
    List<DynamicTest> tests = new ArrayList<>();
    for (JsonNode c : doc.get("cases")) {
      int len = c.get("input_len").intValue();
      byte[] input = input(len);
      for (Object[] m : modes) {
        String name = (String) m[0];
        Mode mode = (Mode) m[1];
        byte[] expected = HEX.parseHex(c.get(name).textValue());
        tests.add(
            DynamicTest.dynamicTest(
                name + " len=" + len + " extended " + expected.length + " bytes",
                () -> assertArrayEquals(expected, mode.apply(input, expected.length))));
        tests.add(
            DynamicTest.dynamicTest(
                name + " len=" + len + " default 32 bytes",
                () -> {
                  byte[] first32 = Arrays.copyOf(expected, Blake3.OUT_LEN);
                  assertArrayEquals(first32, mode.apply(input, Blake3.OUT_LEN));
                  if (name.equals("hash")) {
                    assertArrayEquals(first32, Blake3.hash(input));
                    assertEquals(HEX.formatHex(first32), Blake3.hex(input));
                  }
                }));
      }
    }
    assertFalse(tests.isEmpty(), "no BLAKE3 vectors found");
    System.out.printf("blake3: %d cases -> %d checks%n", doc.get("cases").size(), tests.size());
    return tests.stream();
  }

  /** The vectors' input: input_len bytes of the repeating sequence 0, 1, ..., 250. */
  private static byte[] input(int len) {
    byte[] b = new byte[len];
    for (int i = 0; i < len; i++) {
      b[i] = (byte) (i % 251);
    }
    return b;
  }
}
