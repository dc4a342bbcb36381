package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * RFC 8785 vectors (vectors/jcs: input → output bytes and outhex) through {@link
 * CanonicalJson#canonicalize(byte[])}, and inputs the strict parser must refuse with a message that
 * says where.
 */
class JcsVectorsTest {
  /** A refusal must point somewhere: a byte offset, or a line/column. */
  private static final Pattern POSITION =
      Pattern.compile("byte \\d+|column: ?\\d+|at char \\d+", Pattern.CASE_INSENSITIVE);

  @TestFactory
  Stream<DynamicTest> vectors() {
    Path jcs = VectorFiles.dir("jcs");
    List<Path> inputs = VectorFiles.files(jcs.resolve("input"), ".json");
    assertFalse(inputs.isEmpty(), "no JCS vectors");
    System.out.printf("jcs: %d vectors%n", inputs.size());
    return inputs.stream()
        .flatMap(
            in -> {
              String name = in.getFileName().toString();
              String stem = name.substring(0, name.length() - ".json".length());
              byte[] actual = CanonicalJson.canonicalize(VectorFiles.read(in));
              return Stream.of(
                  DynamicTest.dynamicTest(
                      name + " = output/" + name,
                      () ->
                          assertArrayEquals(
                              VectorFiles.read(jcs.resolve("output").resolve(name)), actual)),
                  DynamicTest.dynamicTest(
                      name + " = outhex/" + stem + ".txt",
                      () ->
                          assertArrayEquals(
                              outhex(jcs.resolve("outhex").resolve(stem + ".txt")), actual)));
            });
  }

  @TestFactory
  Stream<DynamicTest> refusals() {
    return Stream.of(
            refusal("duplicate key", "{\"a\":1,\"a\":2}"),
            refusal("duplicate key, nested", "{\"x\":{\"b\":true,\"c\":0,\"b\":false}}"),
            refusal(
                "truncated UTF-8 sequence C3 28", "byte 6", bytes("{\"a\":\"", 0xC3, 0x28, "\"}")),
            refusal("overlong C0 AF", "byte 6", bytes("{\"a\":\"", 0xC0, 0xAF, "\"}")),
            refusal(
                "encoded surrogate ED A0 80",
                "byte 6",
                bytes("{\"a\":\"", 0xED, 0xA0, 0x80, "\"}")),
            refusal("stray continuation byte 80", "byte 2", bytes("[\"", 0x80, "\"]")),
            refusal("trailing garbage token", "{\"a\":1} x"),
            refusal("trailing second value", "{\"a\":1} {}"),
            refusal("trailing close bracket", "[1]]"),
            refusal("NaN", "{\"a\":NaN}"),
            refusal("Infinity", "[Infinity]"),
            refusal("-Infinity", "[-Infinity]"),
            refusal("leading plus", "[+1]"),
            refusal("leading zero", "[01]"),
            refusal("byte-order mark", "byte 0", bytes("", 0xEF, 0xBB, 0xBF, "{}")),
            refusal("empty input", ""))
        .map(r -> DynamicTest.dynamicTest(r.name(), r.check()));
  }

  /** One input the strict parser must refuse; {@code where} is the exact position, if known. */
  @SuppressWarnings("ArrayRecordComponent") // never compared; only fed to the parser
  private record Refusal(String name, String where, byte[] input) {
    org.junit.jupiter.api.function.Executable check() {
      return () -> {
        CanonicalJsonException e =
            assertThrows(CanonicalJsonException.class, () -> CanonicalJson.canonicalize(input));
        System.out.printf("jcs refusal %-34s -> %s%n", name, e.getMessage());
        if (input.length > 0) {
          assertTrue(
              POSITION.matcher(e.getMessage()).find(),
              name + ": message does not say where: " + e.getMessage());
        }
        if (where != null) {
          assertTrue(e.getMessage().contains(where), name + ": expected " + where + " in message");
        }
      };
    }
  }

  private static Refusal refusal(String name, String text) {
    return new Refusal(name, null, text.getBytes(StandardCharsets.UTF_8));
  }

  private static Refusal refusal(String name, String where, byte[] input) {
    return new Refusal(name, where, input);
  }

  /** Mixes ASCII text and raw byte values into one input. */
  private static byte[] bytes(Object... parts) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    for (Object p : parts) {
      if (p instanceof String s) {
        out.writeBytes(s.getBytes(StandardCharsets.US_ASCII));
      } else {
        out.write((Integer) p);
      }
    }
    return out.toByteArray();
  }

  private static byte[] outhex(Path file) {
    String hex =
        new String(VectorFiles.read(file), StandardCharsets.US_ASCII).replaceAll("\\s", "");
    return HexFormat.of().parseHex(hex);
  }
}
