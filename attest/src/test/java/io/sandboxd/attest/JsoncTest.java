package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.ManifestRefusedException.Refusal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The JSONC pre-pass and the bad input of issue 11: each a clear refusal, never a crash or hang.
 */
class JsoncTest {
  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static Refusal unreadable(byte[] doc) {
    List<Refusal> r =
        assertThrows(ManifestRefusedException.class, () -> DevcontainerIngest.ingest(doc))
            .refusals();
    assertEquals(1, r.size(), r.toString());
    assertEquals("document", r.get(0).field());
    return r.get(0);
  }

  @Test
  void thePrePassKeepsEveryByteWhereItWas() {
    String in = "\uFEFF{ // c\n \"a\": [1, 2,], /* x\ny */ \"b\": \"/*no*/\", }";
    byte[] out = Jsonc.toJson(utf8(in));
    assertEquals(utf8(in).length, out.length);
    String s = new String(out, StandardCharsets.UTF_8);
    assertEquals("   {     \n \"a\": [1, 2 ],     \n     \"b\": \"/*no*/\"  }", s);
  }

  @Test
  void parseErrorsNameTheByteInTheOriginalDocument() {
    // The stray 'x' is at byte 20 of the original, comment and all.
    String doc = "{/* twelve */ \"a\": x}";
    String why = unreadable(utf8(doc)).reason();
    assertTrue(why.contains("at byte 19"), why);
  }

  @Test
  void onlyOneTrailingCommaAfterAValueIsForgiven() {
    for (String bad : List.of("{\"image\":\"i\",,}", "{,}", "[,]", "{\"image\":\"i\"},")) {
      unreadable(utf8(bad));
    }
  }

  @Test
  void unterminatedCommentAndStringAreRefused() {
    assertTrue(unreadable(utf8("{\"image\":\"i\"} /* open")).reason().contains("unterminated"));
    unreadable(utf8("{\"image\":\"i"));
    unreadable(utf8("{\"image\":\"i\\"));
  }

  @Test
  void duplicateKeysAreRefusedEvenAcrossCommentsAndNesting() {
    assertTrue(
        unreadable(utf8("{\"image\":\"a\", // again\n \"image\":\"b\"}"))
            .reason()
            .contains("image"));
    unreadable(utf8("{\"image\":\"a\",\"containerEnv\":{\"X\":\"1\",\"X\":\"2\"}}"));
  }

  @Test
  void deepNestingIsRefusedByDepthNotByTheStack() {
    for (int depth : new int[] {Jsonc.MAX_DEPTH + 1, 5_000, 200_000}) {
      String deep = "[".repeat(depth) + "]".repeat(depth);
      String why = unreadable(utf8("{\"image\":\"i\",\"name\":" + deep + "}")).reason();
      assertTrue(why.contains("nested deeper than " + Jsonc.MAX_DEPTH), why);
      unreadable(utf8("{".repeat(depth)));
    }
    // Just inside the bound is fine in an excluded field.
    String ok = "[".repeat(Jsonc.MAX_DEPTH - 1) + "]".repeat(Jsonc.MAX_DEPTH - 1);
    DevcontainerIngest.ingest(utf8("{\"image\":\"i\",\"name\":" + ok + "}"));
  }

  @Test
  void aMultiMegabyteStringIsAcceptedWithinTheBoundAndRefusedBeyondIt() {
    String three = "x".repeat(3 << 20);
    EnvManifest m = DevcontainerIngest.ingest(utf8("{\"image\":\"i\",\"name\":\"" + three + "\"}"));
    assertEquals(DevcontainerIngest.ingest(utf8("{\"image\":\"i\"}")).address(), m.address());
    String five = "x".repeat(5 << 20);
    String why = unreadable(utf8("{\"image\":\"i\",\"name\":\"" + five + "\"}")).reason();
    assertTrue(why.contains("at most " + Jsonc.MAX_BYTES), why);
  }

  @Test
  void invalidUtf8IsRefusedNamingTheByte() {
    byte[] doc = utf8("{\"image\":\"ab\"}");
    doc[11] = (byte) 0xC3; // a lead byte followed by an ASCII one
    assertTrue(unreadable(doc).reason().contains("invalid UTF-8 at byte 11"));
    byte[] inComment = utf8("{\"image\":\"i\"} // xx");
    inComment[inComment.length - 1] = (byte) 0xFF;
    assertTrue(unreadable(inComment).reason().contains("invalid UTF-8"));
  }

  @Test
  void aNonObjectTopLevelIsRefused() {
    for (String doc : List.of("[]", "\"image\"", "42", "null", "true", "", "  // only\n")) {
      unreadable(utf8(doc));
    }
    assertTrue(unreadable(utf8("[{\"image\":\"i\"}]")).reason().contains("got an array"));
  }

  @Test
  void randomBytesNeverEscapeAsAnythingButARefusal() {
    long seed = 0x5EED_11L;
    Random rnd = new Random(seed);
    String alphabet = "{}[],:\"/*\\\n x1-.e\uFEFFtruefalsenull";
    byte[] base = utf8("{\"image\":\"i\",\"mounts\":[\"type=bind,source=/a,target=/b\"],\"f\":{}}");
    for (int n = 0; n < 3000; n++) {
      byte[] doc;
      if (n % 2 == 0) {
        doc = Arrays.copyOf(base, base.length);
        for (int k = 0; k < 1 + rnd.nextInt(4); k++) {
          doc[rnd.nextInt(doc.length)] = (byte) alphabet.charAt(rnd.nextInt(alphabet.length()));
        }
      } else {
        doc = new byte[rnd.nextInt(40)];
        rnd.nextBytes(doc);
      }
      try {
        DevcontainerIngest.ingest(doc);
        DevcontainerIngest.derive(doc);
      } catch (ManifestRefusedException expected) {
        assertTrue(!expected.refusals().isEmpty(), "seed " + seed + " case " + n);
      } catch (RuntimeException e) {
        throw new AssertionError("seed " + seed + " case " + n + ": " + e, e);
      }
    }
  }
}
