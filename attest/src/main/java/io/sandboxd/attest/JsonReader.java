package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiFunction;

/**
 * The one strict reader of JSON objects (grants, configuration, record cores): unknown keys, wrong
 * types and out-of-range numbers are errors that name their JSON path ({@code $.a.b[1]}). Each
 * document kind supplies its own exception through a {@link Fault}, so every error reads {@code
 * path: problem} whichever kind of document was at fault.
 *
 * <p>Two kinds of field: <em>required</em> ones ({@link #string}, {@link #u64(String)}, {@link
 * #bool(String)}, {@link #object(String)}) must be present, and <em>optional</em> ones ({@link
 * #optional}, {@link #u64(String, long)}, {@link #bool(String, boolean)}, ...) read an absent key
 * or an explicit {@code null} as their default.
 */
public final class JsonReader {
  /** Largest integer any document may carry (WIRE.md §2.0.1: integers only in [0, 2^53-1]). */
  public static final long MAX_U64 = CanonicalJson.MAX_SAFE_INTEGER;

  /** Largest u32. */
  public static final long MAX_U32 = 0xFFFF_FFFFL;

  private static final BigInteger BIG_MAX_U64 = BigInteger.valueOf(MAX_U64);

  /** Makes the exception a document kind throws for the field at {@code path}. */
  @FunctionalInterface
  public interface Fault {
    RuntimeException at(String path, String problem);
  }

  /** Record cores: {@link AttestException} with the message {@code path: problem}. */
  public static final Fault RECORD = (path, problem) -> new AttestException(path + ": " + problem);

  private final JsonNode node;
  private final String path;
  private final Fault fault;

  private JsonReader(JsonNode node, String path, Fault fault) {
    this.node = node;
    this.path = path;
    this.fault = fault;
  }

  /** Reads {@code node} as an object; anything else is an error at {@code path}. */
  public static JsonReader of(JsonNode node, String path, Fault fault) {
    if (node == null || !node.isObject()) {
      throw fault.at(path, "expected an object, got " + typeOf(node));
    }
    return new JsonReader(node, path, fault);
  }

  /** As {@link #of}, with every key required to be in {@code known}. */
  public static JsonReader of(JsonNode node, String path, Set<String> known, Fault fault) {
    return of(node, path, fault).only(known);
  }

  /** Refuses any key not in {@code known}: dropping one silently would change what it means. */
  public JsonReader only(Set<String> known) {
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!known.contains(key)) {
        throw fault.at(pathOf(key), "unknown field");
      }
    }
    return this;
  }

  public JsonNode node() {
    return node;
  }

  public String path() {
    return path;
  }

  public String pathOf(String key) {
    return path + "." + key;
  }

  // The path of a value is built only for an error: records are read on every store check, and
  // building "path.key" for each field read was a tenth of a stored run's check.

  private String textAt(JsonNode v, String key) {
    return v.isTextual() ? v.textValue() : text(v, pathOf(key), fault);
  }

  private long integerAt(JsonNode v, String key, long min, long max) {
    if (v.isIntegralNumber() && v.canConvertToLong()) {
      long n = v.longValue();
      if (n >= min && n <= max && (min < 0 || n <= MAX_U64)) {
        return n;
      }
    }
    return integer(v, pathOf(key), min, max, fault); // throws, or the same value
  }

  /** The error this reader's document kind throws for {@code problem} at {@code path}. */
  public RuntimeException fault(String path, String problem) {
    return fault.at(path, problem);
  }

  // --- presence ---

  /** The value of {@code key}, empty when absent or {@code null}. */
  public Optional<JsonNode> optional(String key) {
    JsonNode v = node.get(key);
    return v == null || v.isNull() ? Optional.empty() : Optional.of(v);
  }

  /** The value of {@code key}, which must be present (it may be {@code null}). */
  public JsonNode required(String key) {
    JsonNode v = node.get(key);
    if (v == null) {
      throw fault.at(pathOf(key), "missing");
    }
    return v;
  }

  // --- strings ---

  /** A required string. */
  public String string(String key) {
    return textAt(required(key), key);
  }

  /** A required key holding a string or {@code null}. */
  public String nullableString(String key) {
    JsonNode v = required(key);
    return v.isNull() ? null : textAt(v, key);
  }

  /** An optional string. */
  public Optional<String> optionalString(String key) {
    return optional(key).map(v -> textAt(v, key));
  }

  /** An optional string, {@code dflt} when absent. */
  public String string(String key, String dflt) {
    return optionalString(key).orElse(dflt);
  }

  /** A required string of 64 lowercase hex digits (a BLAKE3-256 address). */
  public String hex32(String key) {
    String s = string(key);
    if (!Hex.isHex(s, 32)) {
      Hex.decode(s, 32, pathOf(key)); // throws, naming what is wrong
    }
    return s;
  }

  /** A required key holding 64 hex digits or {@code null}. */
  public String nullableHex32(String key) {
    String s = nullableString(key);
    if (s != null && !Hex.isHex(s, 32)) {
      Hex.decode(s, 32, pathOf(key)); // throws, naming what is wrong
    }
    return s;
  }

  /** Requires the {@code schema} key to name {@code expected}. */
  public JsonReader schema(String expected) {
    String s = string("schema");
    if (!s.equals(expected)) {
      throw fault.at(pathOf("schema"), "expected \"" + expected + "\", got \"" + s + "\"");
    }
    return this;
  }

  // --- numbers ---

  /** A required integer in [0, 2^53-1]. */
  public long u64(String key) {
    return integerAt(required(key), key, 0, MAX_U64);
  }

  /** A required key holding an integer in [0, 2^53-1] or {@code null}. */
  public Long nullableU64(String key) {
    JsonNode v = required(key);
    return v.isNull() ? null : integerAt(v, key, 0, MAX_U64);
  }

  /** An optional integer in [0, 2^53-1], {@code dflt} when absent. */
  public long u64(String key, long dflt) {
    return optionalInteger(key, 0, MAX_U64).orElse(dflt);
  }

  /** An optional integer in [0, 2^32-1], {@code dflt} when absent. */
  public long u32(String key, long dflt) {
    return optionalInteger(key, 0, MAX_U32).orElse(dflt);
  }

  /** An optional integer in [min, max], {@code dflt} when absent. */
  public long integer(String key, long dflt, long min, long max) {
    return optionalInteger(key, min, max).orElse(dflt);
  }

  /** An optional integer in [min, max]. */
  public Optional<Long> optionalInteger(String key, long min, long max) {
    return optional(key).map(v -> integerAt(v, key, min, max));
  }

  // --- booleans ---

  /** A required boolean. */
  public boolean bool(String key) {
    return bool(required(key), pathOf(key), fault);
  }

  /** An optional boolean, {@code dflt} when absent. */
  public boolean bool(String key, boolean dflt) {
    return optional(key).map(v -> bool(v, pathOf(key), fault)).orElse(dflt);
  }

  // --- structure ---

  /** A required object. */
  public JsonReader object(String key) {
    return of(required(key), pathOf(key), fault);
  }

  /** A required object whose keys must all be in {@code known}. */
  public JsonReader object(String key, Set<String> known) {
    return object(key).only(known);
  }

  /** An optional object whose keys must all be in {@code known}; absent reads as empty. */
  public JsonReader objectOrEmpty(String key, Set<String> known) {
    return optionalObject(key, known)
        .orElseGet(
            () -> new JsonReader(CanonicalJson.mapper().createObjectNode(), pathOf(key), fault));
  }

  /** An optional object whose keys must all be in {@code known}. */
  public Optional<JsonReader> optionalObject(String key, Set<String> known) {
    return optional(key).map(v -> of(v, pathOf(key), known, fault));
  }

  /** An optional array read element by element (absent reads as empty). */
  public <T> List<T> list(String key, BiFunction<JsonNode, String, T> element) {
    List<T> out = new ArrayList<>();
    Optional<JsonNode> v = optional(key);
    if (v.isEmpty()) {
      return out;
    }
    if (!v.get().isArray()) {
      throw fault.at(pathOf(key), "expected an array, got " + typeOf(v.get()));
    }
    for (int i = 0; i < v.get().size(); i++) {
      out.add(element.apply(v.get().get(i), pathOf(key) + "[" + i + "]"));
    }
    return out;
  }

  /** An optional array of strings (absent reads as {@code dflt}). */
  public List<String> strings(String key, List<String> dflt) {
    if (optional(key).isEmpty()) {
      return dflt;
    }
    return list(key, (n, p) -> text(n, p, fault));
  }

  // --- single values ---

  /** {@code n} as a string. */
  public static String text(JsonNode n, String path, Fault fault) {
    if (n == null || !n.isTextual()) {
      throw fault.at(path, "expected a string, got " + typeOf(n));
    }
    return n.textValue();
  }

  /** {@code n} as a boolean. */
  public static boolean bool(JsonNode n, String path, Fault fault) {
    if (n == null || !n.isBoolean()) {
      throw fault.at(path, "expected a boolean, got " + typeOf(n));
    }
    return n.booleanValue();
  }

  /** {@code n} as an integer in [min, max] (never beyond [0, 2^53-1] for non-negative ranges). */
  public static long integer(JsonNode n, String path, long min, long max, Fault fault) {
    if (n == null || !n.isNumber()) {
      throw fault.at(path, "expected an integer, got " + typeOf(n));
    }
    if (!n.isIntegralNumber()) {
      throw fault.at(path, "expected an integer, got the non-integer number " + n);
    }
    BigInteger v = n.bigIntegerValue();
    if (min >= 0 && v.signum() < 0) {
      throw fault.at(path, "negative number " + v + " is not allowed");
    }
    if (v.compareTo(BigInteger.valueOf(min)) < 0
        || v.compareTo(BigInteger.valueOf(max)) > 0
        || (min >= 0 && v.compareTo(BIG_MAX_U64) > 0)) {
      throw fault.at(path, "integer " + v + " outside [" + min + ", " + max + "]");
    }
    return v.longValue();
  }

  /**
   * The constant of {@code type} spelled exactly {@code name}; anything else is a record's "unknown
   * {@code what}" at {@code path}.
   */
  static <E extends Enum<E>> E constant(Class<E> type, String name, String path, String what) {
    for (E e : type.getEnumConstants()) {
      if (e.name().equals(name)) {
        return e;
      }
    }
    throw RECORD.at(path, "unknown " + what + " \"" + name + "\"");
  }

  /** How a value is named in an error: "an object", "a string", "nothing", ... */
  public static String typeOf(JsonNode n) {
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
      default -> n.getNodeType().toString().toLowerCase(Locale.ROOT);
    };
  }
}
