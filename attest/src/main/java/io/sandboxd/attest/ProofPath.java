package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.StringJoiner;

/**
 * Value semantics for proof paths: proof records hold arrays, so copying, equality and printing go
 * by content here instead of by array identity.
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

  /** Puts {@code path} in {@code o} as its wire form: {@code "path":[hex...]}. */
  static void put(ObjectNode o, List<byte[]> path) {
    ArrayNode p = o.putArray("path");
    for (byte[] h : path) {
      p.add(Hex.encode(h));
    }
  }

  /** Reads a proof's {@code path} strictly: an array of 32-byte lowercase hex hashes. */
  static List<byte[]> read(JsonReader r) {
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
