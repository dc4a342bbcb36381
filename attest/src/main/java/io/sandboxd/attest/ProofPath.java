package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.StringJoiner;

/**
 * What the two proof records share: value semantics for their paths (they hold arrays, so copying,
 * equality and printing go by content here instead of by array identity) and their wire form, two
 * sizes and a path.
 */
final class ProofPath {
  private ProofPath() {}

  static List<byte[]> copy(List<byte[]> path) {
    List<byte[]> out = new ArrayList<>(path.size());
    for (byte[] h : path) {
      if (h == null) {
        throw new NullPointerException("proof path element " + out.size() + " is null");
      }
      out.add(h.clone());
    }
    return List.copyOf(out);
  }

  /** Whether two proofs have the same two sizes and the same path by content. */
  static boolean same(long a0, long a1, List<byte[]> a, long b0, long b1, List<byte[]> b) {
    if (a0 != b0 || a1 != b1 || a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      if (!Arrays.equals(a.get(i), b.get(i))) {
        return false;
      }
    }
    return true;
  }

  /** A proof's hash code by its two sizes and its path's content. */
  static int hash(long first, long second, List<byte[]> path) {
    int h = 1;
    for (byte[] e : path) {
      h = 31 * h + Arrays.hashCode(e);
    }
    return 31 * (31 * Long.hashCode(first) + Long.hashCode(second)) + h;
  }

  /** What builds a proof record from its two sizes and its path. */
  @FunctionalInterface
  interface Maker<T> {
    T make(long first, long second, List<byte[]> path);
  }

  /** A proof's wire form: {@code {"<firstField>","<secondField>","path":[hex...]}}. */
  static ObjectNode json(
      String firstField, long first, String secondField, long second, List<byte[]> path) {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put(firstField, first);
    o.put(secondField, second);
    ArrayNode p = o.putArray("path");
    for (byte[] h : path) {
      p.add(Hex.encode(h));
    }
    return o;
  }

  /**
   * Reads a proof's wire form strictly: its two sizes, a {@code path} of 32-byte lowercase hex
   * hashes, and no other fields.
   */
  static <T> T read(JsonNode json, String firstField, String secondField, Maker<T> maker) {
    JsonReader r =
        JsonReader.of(json, "proof", JsonReader.RECORD)
            .only(Set.of(firstField, secondField, "path"));
    List<byte[]> path = path(r);
    return maker.make(r.u64(firstField), r.u64(secondField), path);
  }

  private static List<byte[]> path(JsonReader r) {
    JsonNode p = r.required("path");
    if (!p.isArray()) {
      throw new AttestException("proof.path: expected an array");
    }
    List<byte[]> path = new ArrayList<>(p.size());
    for (int i = 0; i < p.size(); i++) {
      JsonNode h = p.get(i);
      String field = "proof.path[" + i + "]";
      if (!h.isTextual()) {
        throw new AttestException(field + ": expected a hex string");
      }
      path.add(Hex.decode(h.textValue(), 32, field));
    }
    return path;
  }

  /** A proof as a record prints itself, with its path in hex: {@code Name[a=1, b=2, path=[..]]}. */
  static String text(
      String name,
      String firstName,
      long first,
      String secondName,
      long second,
      List<byte[]> path) {
    StringJoiner j = new StringJoiner(",", "[", "]");
    for (byte[] e : path) {
      j.add(Hex.encode(e));
    }
    return name
        + "["
        + firstName
        + "="
        + first
        + ", "
        + secondName
        + "="
        + second
        + ", path="
        + j
        + "]";
  }
}
