package io.sandboxd.attest;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import org.erdtman.jcs.NumberToJSON;

/**
 * RFC 8785 (JCS) canonical bytes: the one function every hash and signature in sandboxd goes
 * through, and the strict parser that feeds it (duplicate keys and invalid UTF-8 are errors).
 */
public final class CanonicalJson {
  /** Largest integer a signed record may carry (WIRE.md §2.0.1). */
  public static final long MAX_SAFE_INTEGER = (1L << 53) - 1;

  private static final long BIG_SAFE_LONG = 1L << 53;
  private static final BigInteger BIG_SAFE = BigInteger.valueOf(BIG_SAFE_LONG);

  private static final ObjectMapper MAPPER =
      JsonMapper.builder(
              JsonFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build())
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS)
          .disable(JsonParser.Feature.ALLOW_COMMENTS)
          .nodeFactory(JsonNodeFactory.withExactBigDecimals(false))
          .build();

  private CanonicalJson() {}

  /** The shared strict mapper (for building trees; parse input through {@link #parse}). */
  public static ObjectMapper mapper() {
    return MAPPER;
  }

  /** A new record core holding only its {@code schema}: where every signed record's core starts. */
  public static ObjectNode core(String schema) {
    return MAPPER.createObjectNode().put("schema", schema);
  }

  /** Parses a JSON text strictly: valid UTF-8, no duplicate keys, exactly one value. */
  public static JsonNode parse(byte[] utf8) {
    checkUtf8(utf8);
    if (utf8.length >= 3
        && (utf8[0] & 0xff) == 0xEF
        && (utf8[1] & 0xff) == 0xBB
        && (utf8[2] & 0xff) == 0xBF) {
      throw new CanonicalJsonException("byte 0: a byte-order mark is not allowed");
    }
    try {
      JsonNode node = MAPPER.readTree(utf8);
      if (node == null || node.isMissingNode()) {
        throw new CanonicalJsonException("empty input: expected one JSON value");
      }
      try {
        checkSurrogates(node);
      } catch (Fault f) {
        throw f.named();
      }
      return node;
    } catch (JsonProcessingException e) {
      // Parse errors and trailing values alike: name the byte where reading stopped.
      JsonLocation loc = e.getLocation();
      String where =
          loc == null || loc.getByteOffset() < 0 ? "" : " at byte " + loc.getByteOffset();
      String what =
          e instanceof JsonParseException
              ? e.getOriginalMessage()
              : "a second value follows the first (a document holds exactly one value)";
      throw new CanonicalJsonException("malformed JSON" + where + ": " + what, e);
    } catch (IOException e) {
      throw new CanonicalJsonException("malformed JSON: " + e.getMessage(), e);
    }
  }

  public static JsonNode parse(String text) {
    return parse(text.getBytes(StandardCharsets.UTF_8));
  }

  /** Canonical bytes of a JSON text (parse strictly, then canonicalize). */
  public static byte[] canonicalize(byte[] utf8) {
    return canonicalize(parse(utf8));
  }

  /**
   * RFC 8785 canonical bytes of a tree: sorted keys (UTF-16 order), ES6 numbers, minimal escapes.
   */
  public static byte[] canonicalize(JsonNode node) {
    return canonicalString(node).getBytes(StandardCharsets.UTF_8);
  }

  /**
   * The canonical form as text; its UTF-8 bytes are {@link #canonicalize(JsonNode)}'s (a lone
   * surrogate, the one text without a UTF-8 form, is refused while writing).
   */
  public static String canonicalString(JsonNode node) {
    StringBuilder sb = new StringBuilder(256);
    try {
      write(node, sb, false);
    } catch (Fault f) {
      throw f.named();
    }
    return sb.toString();
  }

  /**
   * The canonical text of a signed record's core: {@link #requireIntegersOnly} and {@link
   * #canonicalString} in one pass over the tree, refusing what they refuse with the same message.
   */
  public static String recordString(JsonNode core) {
    StringBuilder sb = new StringBuilder(512);
    try {
      write(core, sb, true);
    } catch (Fault f) {
      // The two checks in their own order, so a core with several faults is refused for the one
      // the separate calls name first (the integer walk goes in member order, the writer sorted).
      requireIntegersOnly(core);
      return canonicalString(core);
    }
    return sb.toString();
  }

  /**
   * Checks the signed-record number rule: every number is an integer in [0, 2^53-1]. Throws naming
   * the JSON path of the first offending value.
   */
  public static void requireIntegersOnly(JsonNode node) {
    try {
      requireIntegers(node);
    } catch (Fault f) {
      throw f.named();
    }
  }

  private static void requireIntegers(JsonNode node) {
    if (node.isNumber()) {
      requireInteger(node);
    } else if (node.isObject()) {
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        try {
          requireIntegers(e.getValue());
        } catch (Fault f) {
          throw f.under("." + e.getKey());
        }
      }
    } else if (node.isArray()) {
      for (int i = 0; i < node.size(); i++) {
        try {
          requireIntegers(node.get(i));
        } catch (Fault f) {
          throw f.under("[" + i + "]");
        }
      }
    }
  }

  private static void requireInteger(JsonNode number) {
    if (!number.isIntegralNumber()) {
      throw new Fault("non-integer number " + number + " in a record");
    }
    if (number.canConvertToLong()) {
      long v = number.longValue();
      if (v >= 0 && v <= MAX_SAFE_INTEGER) {
        return;
      }
    }
    BigInteger v = number.bigIntegerValue();
    if (v.signum() < 0 || v.compareTo(BIG_SAFE) >= 0) {
      throw new Fault("integer " + v + " outside [0, 2^53-1]");
    }
  }

  // Paths are spelled only when something is refused: a member or element adds its step to the
  // fault as it passes through, so a tree written without fault builds no path strings.
  private static void write(JsonNode node, StringBuilder sb, boolean integersOnly) {
    switch (node.getNodeType()) {
      case OBJECT -> writeObject(node, sb, integersOnly);
      case ARRAY -> {
        sb.append('[');
        for (int i = 0; i < node.size(); i++) {
          if (i > 0) {
            sb.append(',');
          }
          try {
            write(node.get(i), sb, integersOnly);
          } catch (Fault f) {
            throw f.under("[" + i + "]");
          }
        }
        sb.append(']');
      }
      case STRING -> writeString(node.textValue(), sb);
      case NUMBER -> {
        if (integersOnly) {
          requireInteger(node);
        }
        writeNumber(node, sb);
      }
      case BOOLEAN -> sb.append(node.booleanValue() ? "true" : "false");
      case NULL -> sb.append("null");
      default -> throw new Fault("not a JSON value: " + node.getNodeType());
    }
  }

  private static void writeObject(JsonNode node, StringBuilder sb, boolean integersOnly) {
    int n = node.size();
    @SuppressWarnings("unchecked")
    Map.Entry<String, JsonNode>[] members = new Map.Entry[n];
    boolean sorted = true;
    int i = 0;
    for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); i++) {
      members[i] = it.next();
      sorted &= i == 0 || members[i - 1].getKey().compareTo(members[i].getKey()) < 0;
    }
    if (!sorted) {
      // String.compareTo orders by UTF-16 code units, which is what RFC 8785 §3.2.3 asks for.
      Arrays.sort(members, Map.Entry.comparingByKey());
    }
    sb.append('{');
    for (i = 0; i < n; i++) {
      if (i > 0) {
        sb.append(',');
      }
      String k = members[i].getKey();
      writeString(k, sb);
      sb.append(':');
      try {
        write(members[i].getValue(), sb, integersOnly);
      } catch (Fault f) {
        throw f.under("." + k);
      }
    }
    sb.append('}');
  }

  private static void writeNumber(JsonNode node, StringBuilder sb) {
    if (node.isIntegralNumber()) {
      if (node.canConvertToLong()) {
        long v = node.longValue();
        // Integers a double holds exactly print as their digits in ES6 form too.
        if (v >= -BIG_SAFE_LONG && v <= BIG_SAFE_LONG) {
          sb.append(v);
          return;
        }
      }
    }
    double d = node.doubleValue();
    if (Double.isNaN(d) || Double.isInfinite(d)) {
      throw new Fault("number " + node + " is not a finite double");
    }
    try {
      sb.append(NumberToJSON.serializeNumber(d));
    } catch (IOException e) {
      throw new Fault(e.getMessage(), e);
    }
  }

  private static void writeString(String s, StringBuilder sb) {
    sb.append('"');
    if (plain(s)) {
      // Nothing to escape and no surrogates: the common case, copied whole.
      sb.append(s).append('"');
      return;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))) {
          throw new Fault("lone surrogate in string at char " + i);
        }
        sb.append(c).append(s.charAt(++i));
        continue;
      }
      if (Character.isLowSurrogate(c)) {
        throw new Fault("lone surrogate in string at char " + i);
      }
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\b' -> sb.append("\\b");
        case '\f' -> sb.append("\\f");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }

  /**
   * Refuses a lone surrogate (a {@code \\ud800} escape with no partner) in any string or member
   * name: such text has no UTF-8 form, so it could never be canonicalized, hashed or stored.
   */
  private static void checkSurrogates(JsonNode node) {
    if (node.isTextual()) {
      checkSurrogates(node.textValue());
    } else if (node.isArray()) {
      for (int i = 0; i < node.size(); i++) {
        try {
          checkSurrogates(node.get(i));
        } catch (Fault f) {
          throw f.under("[" + i + "]");
        }
      }
    } else if (node.isObject()) {
      for (var it = node.fields(); it.hasNext(); ) {
        var e = it.next();
        try {
          checkSurrogates(e.getKey());
        } catch (Fault f) {
          throw f.under(": member name");
        }
        try {
          checkSurrogates(e.getValue());
        } catch (Fault f) {
          throw f.under("." + e.getKey());
        }
      }
    }
  }

  private static void checkSurrogates(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)
          && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        throw new Fault(
            "lone surrogate \\u"
                + Integer.toHexString(c)
                + " at char "
                + i
                + " (not a Unicode character; it has no UTF-8 form)");
      }
    }
  }

  /** True when {@code s} has no character JCS escapes and no surrogate to check. */
  private static boolean plain(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x20 || c == '"' || c == '\\' || Character.isSurrogate(c)) {
        return false;
      }
    }
    return true;
  }

  /** Refuses malformed UTF-8 (overlong forms and encoded surrogates included), naming the byte. */
  static void checkUtf8(byte[] bytes) {
    CharsetDecoder dec =
        StandardCharsets.UTF_8
            .newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);
    ByteBuffer in = ByteBuffer.wrap(bytes);
    CharBuffer out = CharBuffer.allocate(Math.max(16, bytes.length));
    CoderResult r = dec.decode(in, out, true);
    if (r.isError()) {
      throw new CanonicalJsonException(
          "invalid UTF-8 at byte "
              + in.position()
              + " (0x"
              + Integer.toHexString(bytes[in.position()] & 0xff)
              + ")");
    }
  }

  /**
   * A refusal found inside the tree, unwound to the caller's entry point, which names it with the
   * path the unwinding spelled ({@code $.a.b[2]}). No stack trace: it never leaves this class.
   */
  private static final class Fault extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient ArrayDeque<String> steps = new ArrayDeque<>();

    Fault(String what) {
      this(what, null);
    }

    Fault(String what, Throwable cause) {
      super(what, cause, false, false);
    }

    Fault under(String step) {
      steps.addFirst(step);
      return this;
    }

    CanonicalJsonException named() {
      return new CanonicalJsonException(
          "$" + String.join("", steps) + ": " + getMessage(), getCause());
    }
  }
}
