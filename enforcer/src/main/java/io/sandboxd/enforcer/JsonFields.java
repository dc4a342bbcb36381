package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiFunction;

/**
 * The fields of one JSON object read strictly: unknown keys, wrong types and out-of-range numbers
 * are errors naming their JSON path; an explicit {@code null} reads as an absent key.
 */
final class JsonFields {
  /** Largest u64 a grant may carry (WIRE.md §2.0.1: integers only in [0, 2^53-1]). */
  static final long MAX_U64 = (1L << 53) - 1;

  /** Largest u32. */
  static final long MAX_U32 = 0xFFFF_FFFFL;

  private static final BigInteger BIG_MAX_U64 = BigInteger.valueOf(MAX_U64);

  private final JsonNode node;
  private final String path;

  private JsonFields(JsonNode node, String path) {
    this.node = node;
    this.path = path;
  }

  /** Reads {@code node} as an object whose keys must all be in {@code known}. */
  static JsonFields of(JsonNode node, String path, Set<String> known) {
    if (node == null || !node.isObject()) {
      throw new GrantsException(path, "expected an object, got " + typeOf(node));
    }
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!known.contains(key)) {
        throw new GrantsException(path + "." + key, "unknown field");
      }
    }
    return new JsonFields(node, path);
  }

  String path() {
    return path;
  }

  String pathOf(String key) {
    return path + "." + key;
  }

  /** The value of {@code key}, empty when absent or {@code null}. */
  Optional<JsonNode> optional(String key) {
    JsonNode v = node.get(key);
    return v == null || v.isNull() ? Optional.empty() : Optional.of(v);
  }

  boolean bool(String key) {
    Optional<JsonNode> v = optional(key);
    if (v.isEmpty()) {
      return false;
    }
    if (!v.get().isBoolean()) {
      throw new GrantsException(pathOf(key), "expected a boolean, got " + typeOf(v.get()));
    }
    return v.get().booleanValue();
  }

  long u64(String key) {
    return optionalInteger(key, MAX_U64).orElse(0L);
  }

  long u32(String key) {
    return optionalInteger(key, MAX_U32).orElse(0L);
  }

  Optional<Long> optionalInteger(String key, long max) {
    Optional<JsonNode> v = optional(key);
    return v.map(n -> integer(n, pathOf(key), max));
  }

  String text(String key) {
    Optional<JsonNode> v = optional(key);
    if (v.isEmpty()) {
      throw new GrantsException(pathOf(key), "missing string");
    }
    return text(v.get(), pathOf(key));
  }

  /** Reads an array field element by element; absent or null reads as empty. */
  <T> List<T> list(String key, BiFunction<JsonNode, String, T> element) {
    Optional<JsonNode> v = optional(key);
    List<T> out = new ArrayList<>();
    if (v.isEmpty()) {
      return out;
    }
    if (!v.get().isArray()) {
      throw new GrantsException(pathOf(key), "expected an array, got " + typeOf(v.get()));
    }
    for (int i = 0; i < v.get().size(); i++) {
      out.add(element.apply(v.get().get(i), pathOf(key) + "[" + i + "]"));
    }
    return out;
  }

  static String text(JsonNode n, String path) {
    if (n == null || !n.isTextual()) {
      throw new GrantsException(path, "expected a string, got " + typeOf(n));
    }
    return n.textValue();
  }

  static long integer(JsonNode n, String path, long max) {
    if (n == null || !n.isNumber()) {
      throw new GrantsException(path, "expected an integer, got " + typeOf(n));
    }
    if (!n.isIntegralNumber()) {
      throw new GrantsException(path, "expected an integer, got the non-integer number " + n);
    }
    BigInteger v = n.bigIntegerValue();
    if (v.signum() < 0) {
      throw new GrantsException(path, "negative number " + v + " is not allowed");
    }
    if (v.compareTo(BIG_MAX_U64) > 0 || v.longValue() > max) {
      throw new GrantsException(path, "integer " + v + " exceeds the maximum " + max);
    }
    return v.longValue();
  }

  static String typeOf(JsonNode n) {
    if (n == null || n.isMissingNode()) {
      return "nothing";
    }
    return switch (n.getNodeType()) {
      case OBJECT -> "an object";
      case ARRAY -> "an array";
      case STRING -> "a string";
      case NUMBER -> "a number";
      case BOOLEAN -> "a boolean";
      case NULL -> "null";
      default -> n.getNodeType().toString().toLowerCase(java.util.Locale.ROOT);
    };
  }
}
