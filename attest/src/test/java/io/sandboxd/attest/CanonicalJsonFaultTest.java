package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * What {@link CanonicalJson} refuses, and where it says the fault is: the JSON path of the first
 * fault in the order each check walks (the integer rule in member order, the writer in sorted key
 * order), checked against a plain model that spells every path as it goes, over generated trees
 * with faults planted at any depth.
 */
class CanonicalJsonFaultTest {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  @Test
  void pathsNameTheFaultAtAnyDepth() {
    ObjectNode core = F.objectNode();
    core.putObject("b").putArray("list").add(1).add(2).add(-3);
    core.put("a", "x");
    assertEquals(
        "$.b.list[2]: integer -3 outside [0, 2^53-1]",
        refusal(() -> CanonicalJson.requireIntegersOnly(core)));
    assertEquals(
        "$.b.list[2]: integer -3 outside [0, 2^53-1]",
        refusal(() -> CanonicalJson.recordString(core)));

    ObjectNode surrogate = F.objectNode();
    surrogate.putArray("z").add("ok").add("\ud800");
    assertEquals(
        "$.z[1]: lone surrogate in string at char 0",
        refusal(() -> CanonicalJson.canonicalString(surrogate)));

    // In a member name the parser itself refuses it, naming the byte.
    byte[] badKey = "{\"a\":{\"x\\ud800y\":1}}".getBytes(StandardCharsets.UTF_8);
    assertEquals(
        "malformed JSON at byte 14: Broken surrogate pair in field name: expected '\\' to start"
            + " low surrogate, got 0x79",
        refusal(() -> CanonicalJson.parse(badKey)));
    byte[] badValue = "[0,{\"k\":[\"\\ud83d\"]}]".getBytes(StandardCharsets.UTF_8);
    assertEquals(
        "$[1].k[0]: lone surrogate \\ud83d at char 0 (not a Unicode character; it has no UTF-8"
            + " form)",
        refusal(() -> CanonicalJson.parse(badValue)));
  }

  /**
   * A core with faults of both kinds is refused for the one the separate checks name first: the
   * integer rule walks members in insertion order, before anything is written.
   */
  @Test
  void aRecordIsRefusedForTheFaultTheSeparateChecksNameFirst() {
    ObjectNode core = F.objectNode();
    core.put("a", "\udfff");
    core.put("z", 1.5);
    assertEquals(
        "$.z: non-integer number 1.5 in a record", refusal(() -> CanonicalJson.recordString(core)));
    assertEquals(
        "$.a: lone surrogate in string at char 0",
        refusal(() -> CanonicalJson.canonicalString(core)));
  }

  @Test
  void integersAtTheEdgesOfTheRulePrintAsDigits() {
    long safe = CanonicalJson.MAX_SAFE_INTEGER;
    ObjectNode core = F.objectNode();
    core.put("int", 7);
    core.put("long", safe);
    core.put("big", BigInteger.valueOf(safe));
    core.put("short", (short) 3);
    assertEquals(
        "{\"big\":" + safe + ",\"int\":7,\"long\":" + safe + ",\"short\":3}",
        CanonicalJson.recordString(core));
    core.put("long", safe + 1);
    assertEquals(
        "$.long: integer 9007199254740992 outside [0, 2^53-1]",
        refusal(() -> CanonicalJson.recordString(core)));
    // Outside the record rule, 2^53 itself still prints as digits and 2^53+2 in ES6 form.
    assertEquals(
        "{\"a\":9007199254740992,\"b\":-9007199254740992,\"c\":9007199254740994}",
        CanonicalJson.canonicalString(
            F.objectNode()
                .put("a", 1L << 53)
                .put("b", -(1L << 53))
                .put("c", BigInteger.valueOf((1L << 53) + 2))));
  }

  /** Each check, and the one-pass record check, refuses exactly as the model says. */
  @Test
  void refusalsMatchAPathSpellingModel() {
    Seeded.repeat(
        2000,
        g -> {
          JsonNode tree = node(g, 4);
          String integers = firstNonInteger(tree, "$");
          String written = firstUnwritable(tree, "$");
          assertEquals(integers, refusal(() -> CanonicalJson.requireIntegersOnly(tree)));
          assertEquals(written, refusal(() -> CanonicalJson.canonicalString(tree)));
          String record = integers != null ? integers : written;
          assertEquals(record, refusal(() -> CanonicalJson.recordString(tree)));
          if (record == null) {
            assertEquals(CanonicalJson.canonicalString(tree), CanonicalJson.recordString(tree));
          }
        });
  }

  private static String refusal(Executable call) {
    try {
      call.execute();
      return null;
    } catch (CanonicalJsonException e) {
      return e.getMessage();
    } catch (Throwable t) {
      return assertThrows(
              CanonicalJsonException.class,
              () -> {
                throw t;
              })
          .getMessage();
    }
  }

  // The model: each check's walk, spelling the path at every step.

  /** A check as the model sees it: its member order and what it refuses in a name or a leaf. */
  private record Walk(
      boolean sorted,
      BiFunction<String, String, String> name,
      BiFunction<JsonNode, String, String> leaf) {}

  private static final Walk INTEGERS =
      new Walk(false, (k, path) -> null, CanonicalJsonFaultTest::nonInteger);
  private static final Walk WRITER =
      new Walk(true, CanonicalJsonFaultTest::loneSurrogate, CanonicalJsonFaultTest::unwritable);

  private static String firstNonInteger(JsonNode node, String path) {
    return firstFault(node, path, INTEGERS);
  }

  private static String firstUnwritable(JsonNode node, String path) {
    return firstFault(node, path, WRITER);
  }

  private static String firstFault(JsonNode node, String path, Walk walk) {
    if (node.isObject()) {
      List<String> keys = new ArrayList<>();
      node.fieldNames().forEachRemaining(keys::add);
      if (walk.sorted()) {
        keys.sort(String::compareTo);
      }
      for (String k : keys) {
        String f = walk.name().apply(k, path);
        if (f == null) {
          f = firstFault(node.get(k), path + "." + k, walk);
        }
        if (f != null) {
          return f;
        }
      }
      return null;
    }
    for (int i = 0; node.isArray() && i < node.size(); i++) {
      String f = firstFault(node.get(i), path + "[" + i + "]", walk);
      if (f != null) {
        return f;
      }
    }
    return node.isArray() ? null : walk.leaf().apply(node, path);
  }

  private static String nonInteger(JsonNode node, String path) {
    if (!node.isNumber()) {
      return null;
    }
    if (!node.isIntegralNumber()) {
      return path + ": non-integer number " + node + " in a record";
    }
    BigInteger v = node.bigIntegerValue();
    return v.signum() < 0 || v.bitLength() > 53
        ? path + ": integer " + v + " outside [0, 2^53-1]"
        : null;
  }

  private static String unwritable(JsonNode node, String path) {
    if (node.isTextual()) {
      return loneSurrogate(node.textValue(), path);
    }
    return node.isNumber() && !Double.isFinite(node.doubleValue())
        ? path + ": number " + node + " is not a finite double"
        : null;
  }

  private static String loneSurrogate(String s, String path) {
    for (int i = 0; i < s.length(); i++) {
      if (Character.isHighSurrogate(s.charAt(i))
          && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(s.charAt(i))) {
        return path + ": lone surrogate in string at char " + i;
      }
    }
    return null;
  }

  // Trees where faults are rare enough that many are valid, and any may sit at any depth.

  private static JsonNode node(Seeded g, int depth) {
    return JsonTrees.tree(g, depth, 4, () -> scalar(g), () -> text(g));
  }

  private static JsonNode scalar(Seeded g) {
    return switch (g.random().nextInt(10)) {
      case 0, 1, 2 -> F.textNode(text(g));
      case 3, 4 -> F.numberNode(g.random().nextLong() >>> g.intBetween(0, 63));
      case 5 -> F.numberNode(g.random().nextInt(1000));
      case 6 ->
          F.numberNode(BigInteger.valueOf(g.random().nextLong()).shiftLeft(g.intBetween(0, 3)));
      case 7 ->
          g.chance(0.9)
              ? F.booleanNode(g.bool())
              : F.numberNode(g.pick(1.5, -0.0, 1e21, Double.NaN, Double.POSITIVE_INFINITY));
      case 8 -> F.numberNode(-g.intBetween(1, 5));
      default -> F.nullNode();
    };
  }

  /** Short strings, now and then with a lone surrogate (or a whole pair) among plain letters. */
  private static String text(Seeded g) {
    StringBuilder sb = new StringBuilder();
    int n = g.intBetween(0, 4);
    for (int i = 0; i < n; i++) {
      int w = g.random().nextInt(30);
      if (w == 0) {
        sb.append((char) g.intBetween(0xd800, 0xdfff));
      } else if (w == 1) {
        sb.appendCodePoint(g.intBetween(0x10000, 0x10ffff));
      } else {
        sb.append((char) g.intBetween('a', 'e'));
      }
    }
    return sb.toString();
  }
}
