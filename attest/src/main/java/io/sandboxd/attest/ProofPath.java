package io.sandboxd.attest;

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

  static boolean equal(List<byte[]> a, List<byte[]> b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      if (!Arrays.equals(a.get(i), b.get(i))) {
        return false;
      }
    }
    return true;
  }

  static int hash(List<byte[]> path) {
    int h = 1;
    for (byte[] e : path) {
      h = 31 * h + Arrays.hashCode(e);
    }
    return h;
  }

  static String text(List<byte[]> path) {
    StringJoiner j = new StringJoiner(",", "[", "]");
    for (byte[] e : path) {
      j.add(Hex.encode(e));
    }
    return j.toString();
  }
}
