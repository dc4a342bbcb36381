package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
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
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** Properties of {@link CanonicalJson} over generated JSON trees. */
class CanonicalJsonProperties {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** Canonical bytes are a fixed point: re-parsing and re-canonicalizing changes nothing. */
  @Property(tries = 500)
  void canonicalFormIsAFixedPoint(@ForAll("trees") JsonNode tree) {
    byte[] once = CanonicalJson.canonicalize(tree);
    assertArrayEquals(once, CanonicalJson.canonicalize(CanonicalJson.parse(once)));
    assertArrayEquals(once, CanonicalJson.canonicalize(once));
  }

  /** Member order and insignificant whitespace never reach the canonical bytes. */
  @Property(tries = 300)
  void memberOrderAndWhitespaceDoNotMatter(@ForAll("trees") JsonNode tree, @ForAll long seed) {
    byte[] expected = CanonicalJson.canonicalize(tree);
    String loose = shuffled(tree, new Random(seed)).toPrettyString();
    byte[] fromLoose = CanonicalJson.canonicalize(loose.getBytes(StandardCharsets.UTF_8));
    assertArrayEquals(expected, fromLoose);
    assertFalse(new String(expected, StandardCharsets.UTF_8).contains("\n"));
  }

  @Provide
  Arbitrary<JsonNode> trees() {
    return node(3);
  }

  private static Arbitrary<JsonNode> node(int depth) {
    Arbitrary<JsonNode> scalar =
        Arbitraries.oneOf(
            text().map(F::textNode),
            Arbitraries.longs().map(F::numberNode),
            Arbitraries.bigIntegers()
                .between(BigInteger.ZERO, BigInteger.TEN.pow(30))
                .map(F::numberNode),
            Arbitraries.doubles().filter(Double::isFinite).map(F::numberNode),
            Arbitraries.of(true, false).map(F::booleanNode),
            Arbitraries.just(F.nullNode()));
    if (depth == 0) {
      return scalar;
    }
    Arbitrary<JsonNode> child = Arbitraries.lazy(() -> node(depth - 1));
    Arbitrary<JsonNode> array =
        child
            .list()
            .ofMaxSize(4)
            .map(
                items -> {
                  ArrayNode a = F.arrayNode();
                  items.forEach(a::add);
                  return a;
                });
    Arbitrary<JsonNode> object =
        Combinators.combine(text().list().ofMaxSize(4), child.list().ofSize(4))
            .as(
                (keys, values) -> {
                  ObjectNode o = F.objectNode();
                  for (int i = 0; i < keys.size(); i++) {
                    o.set(keys.get(i), values.get(i));
                  }
                  return o;
                });
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(3, scalar),
        net.jqwik.api.Tuple.of(1, array),
        net.jqwik.api.Tuple.of(1, object));
  }

  /**
   * Strings of whole code points (no lone surrogates, which JSON text cannot carry as UTF-8),
   * weighted towards the characters JCS escapes and the non-BMP range that sorts by UTF-16 units.
   */
  private static Arbitrary<String> text() {
    Arbitrary<Integer> codePoint =
        Arbitraries.frequencyOf(
            net.jqwik.api.Tuple.of(4, Arbitraries.integers().between(0x20, 0x7e)),
            net.jqwik.api.Tuple.of(2, Arbitraries.integers().between(0x00, 0x1f)),
            net.jqwik.api.Tuple.of(2, Arbitraries.integers().between(0x80, 0xd7ff)),
            net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(0xe000, 0xffff)),
            net.jqwik.api.Tuple.of(2, Arbitraries.integers().between(0x10000, 0x10ffff)));
    return codePoint
        .list()
        .ofMaxSize(8)
        .map(
            cps -> {
              StringBuilder sb = new StringBuilder();
              cps.forEach(sb::appendCodePoint);
              return sb.toString();
            });
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
