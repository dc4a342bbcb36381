package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Iterator;
import java.util.Set;

/** Strict field access on a record core: every error names the JSON path at fault. */
public final class CoreReader {
  private final JsonNode node;
  private final String path;

  public CoreReader(JsonNode node, String path) {
    if (node == null || !node.isObject()) {
      throw new AttestException(path + ": expected a JSON object");
    }
    this.node = node;
    this.path = path;
  }

  /**
   * Refuses any field not in {@code allowed}: dropping one silently would mint a false identity.
   */
  public CoreReader only(Set<String> allowed) {
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!allowed.contains(f)) {
        throw new AttestException(path + "." + f + ": unknown field");
      }
    }
    return this;
  }

  public JsonNode required(String field) {
    JsonNode v = node.get(field);
    if (v == null) {
      throw new AttestException(path + "." + field + ": missing");
    }
    return v;
  }

  public String string(String field) {
    JsonNode v = required(field);
    if (!v.isTextual()) {
      throw new AttestException(path + "." + field + ": expected a string");
    }
    return v.textValue();
  }

  /** A string or null. */
  public String nullableString(String field) {
    JsonNode v = required(field);
    if (v.isNull()) {
      return null;
    }
    if (!v.isTextual()) {
      throw new AttestException(path + "." + field + ": expected a string or null");
    }
    return v.textValue();
  }

  public String hex32(String field) {
    String s = string(field);
    Hex.decode(s, 32, path + "." + field);
    return s;
  }

  public String nullableHex32(String field) {
    String s = nullableString(field);
    if (s != null) {
      Hex.decode(s, 32, path + "." + field);
    }
    return s;
  }

  /** An integer in [0, 2^53-1]. */
  public long u64(String field) {
    JsonNode v = required(field);
    return u64(v, path + "." + field);
  }

  public static long u64(JsonNode v, String path) {
    if (!v.isIntegralNumber() || !v.canConvertToLong()) {
      throw new AttestException(path + ": expected a non-negative integer");
    }
    long l = v.longValue();
    if (l < 0 || l > CanonicalJson.MAX_SAFE_INTEGER) {
      throw new AttestException(path + ": integer " + l + " outside [0, 2^53-1]");
    }
    return l;
  }

  public Long nullableU64(String field) {
    JsonNode v = required(field);
    return v.isNull() ? null : u64(v, path + "." + field);
  }

  public boolean bool(String field) {
    JsonNode v = required(field);
    if (!v.isBoolean()) {
      throw new AttestException(path + "." + field + ": expected true or false");
    }
    return v.booleanValue();
  }

  public CoreReader object(String field) {
    return new CoreReader(required(field), path + "." + field);
  }

  public JsonNode node() {
    return node;
  }

  public String path() {
    return path;
  }

  /** Requires {@code schema} to equal the expected name. */
  public CoreReader schema(String expected) {
    String s = string("schema");
    if (!s.equals(expected)) {
      throw new AttestException(path + ".schema: expected \"" + expected + "\", got \"" + s + "\"");
    }
    return this;
  }
}
