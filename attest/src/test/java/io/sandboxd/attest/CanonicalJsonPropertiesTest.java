package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Properties of {@link CanonicalJson} over generated JSON trees. */
class CanonicalJsonPropertiesTest {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** Canonical bytes are a fixed point: re-parsing and re-canonicalizing changes nothing. */
  @Test
  void canonicalFormIsAFixedPoint() {
    Seeded.repeat(
        500,
        g -> {
          JsonNode tree = node(g, 3);
          byte[] once = CanonicalJson.canonicalize(tree);
          assertArrayEquals(once, CanonicalJson.canonicalize(CanonicalJson.parse(once)));
          assertArrayEquals(once, CanonicalJson.canonicalize(once));
        });
  }

  /** Member order and insignificant whitespace never reach the canonical bytes. */
  @Test
  void memberOrderAndWhitespaceDoNotMatter() {
    Seeded.repeat(
        300,
        g -> {
          JsonNode tree = node(g, 3);
          byte[] expected = CanonicalJson.canonicalize(tree);
          String loose = shuffled(tree, g.random()).toPrettyString();
          byte[] fromLoose = CanonicalJson.canonicalize(loose.getBytes(StandardCharsets.UTF_8));
          assertArrayEquals(expected, fromLoose);
          assertFalse(new String(expected, StandardCharsets.UTF_8).contains("\n"));
        });
  }

  /**
   * An envelope's line is written around its core's canonical text: byte for byte what
   * canonicalizing the whole envelope gives, for any core and any field text (hex or not).
   */
  @Test
  void anEnvelopeLineIsTheCanonicalFormOfTheEnvelope() {
    Seeded.repeat(
        400,
        g -> {
          JsonNode core = node(g, 3);
          String address = g.chance(0.9) ? hex(g, 32) : text(g);
          String signature = g.chance(0.9) ? hex(g, 64) : text(g);
          String publicKey = g.chance(0.9) ? hex(g, 32) : text(g);
          Envelope e = new Envelope(core, address, signature, publicKey);
          assertEquals(CanonicalJson.canonicalString(e.toJson()), e.toJsonLine());
        });
  }

  private static String hex(Seeded g, int bytes) {
    byte[] b = new byte[bytes];
    g.random().nextBytes(b);
    return Hex.encode(b);
  }

  /** A tree at most {@code depth} deep: scalars three times as often as arrays or objects. */
  private static JsonNode node(Seeded g, int depth) {
    return JsonTrees.tree(g, depth, 3, () -> scalar(g), () -> text(g));
  }

  private static JsonNode scalar(Seeded g) {
    return switch (g.random().nextInt(6)) {
      case 0 -> F.textNode(text(g));
      case 1 -> F.numberNode(g.anyLong());
      case 2 -> F.numberNode(bigBelow1e30(g));
      case 3 -> F.numberNode(finiteDouble(g));
      case 4 -> F.booleanNode(g.bool());
      default -> F.nullNode();
    };
  }

  private static BigInteger bigBelow1e30(Seeded g) {
    BigInteger max = BigInteger.TEN.pow(30);
    if (g.chance(0.125)) {
      return g.pick(BigInteger.ZERO, BigInteger.ONE, max, max.subtract(BigInteger.ONE));
    }
    BigInteger b;
    do {
      b = new BigInteger(max.bitLength(), g.random());
    } while (b.compareTo(max) > 0);
    return b;
  }

  /**
   * Finite doubles: edges (zeros, extremes, subnormals, integers past 2^53) and any bit pattern.
   */
  private static double finiteDouble(Seeded g) {
    if (g.chance(0.25)) {
      return g.pick(
          0.0,
          -0.0,
          1.0,
          -1.0,
          0.1,
          1e21,
          1e-7,
          9007199254740993.0,
          Double.MAX_VALUE,
          -Double.MAX_VALUE,
          Double.MIN_VALUE,
          Double.MIN_NORMAL,
          5e-324);
    }
    double d;
    do {
      d = Double.longBitsToDouble(g.random().nextLong());
    } while (!Double.isFinite(d));
    return d;
  }

  /**
   * Strings of whole code points (no lone surrogates, which JSON text cannot carry as UTF-8),
   * weighted towards the characters JCS escapes and the non-BMP range that sorts by UTF-16 units.
   */
  private static String text(Seeded g) {
    int n = g.intBetween(0, 8);
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < n; i++) {
      int w = g.random().nextInt(11); // weights 4:2:2:1:2 for the ranges below
      int cp =
          w < 4
              ? g.intBetween(0x20, 0x7e)
              : w < 6
                  ? g.intBetween(0x00, 0x1f)
                  : w < 8
                      ? g.intBetween(0x80, 0xd7ff)
                      : w < 9 ? g.intBetween(0xe000, 0xffff) : g.intBetween(0x10000, 0x10ffff);
      sb.appendCodePoint(cp);
    }
    return sb.toString();
  }

  /** A copy of the tree with every object's members inserted in a random order. */
  private static JsonNode shuffled(JsonNode node, Random random) {
    if (node.isObject()) {
      List<Map.Entry<String, JsonNode>> members = new ArrayList<>();
      node.fields().forEachRemaining(members::add);
      Collections.shuffle(members, random);
      ObjectNode o = F.objectNode();
      for (Map.Entry<String, JsonNode> e : members) {
        o.set(e.getKey(), shuffled(e.getValue(), random));
      }
      return o;
    }
    if (node.isArray()) {
      ArrayNode a = F.arrayNode();
      node.forEach(e -> a.add(shuffled(e, random)));
      return a;
    }
    return node;
  }
}
