package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.JsonReader;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Key-value access by direction and key prefix; empty {@code prefixes} with a direction granted
 * means the whole keyspace.
 */
public record KvGrant(boolean read, boolean write, List<Bytes> prefixes) {

  private static final Set<String> FIELDS = Set.of("read", "write", "prefixes");

  public KvGrant {
    prefixes = List.copyOf(new TreeSet<>(prefixes));
  }

  /** No reads, no writes. */
  public static KvGrant empty() {
    return new KvGrant(false, false, List.of());
  }

  static KvGrant parse(JsonNode node, String path) {
    JsonReader f = JsonReader.of(node, path, FIELDS, GrantsException.FAULT);
    return new KvGrant(
        f.bool("read", false), f.bool("write", false), f.list("prefixes", KvGrant::bytes));
  }

  /** Q3 codec: a byte string is a JSON array of integers 0..255. */
  static Bytes bytes(JsonNode n, String p) {
    if (n == null || !n.isArray()) {
      throw new GrantsException(
          p, "expected an array of integers 0..255, got " + JsonReader.typeOf(n));
    }
    byte[] out = new byte[n.size()];
    for (int i = 0; i < n.size(); i++) {
      out[i] =
          (byte) JsonReader.integer(n.get(i), p + "[" + i + "]", 0, 255, GrantsException.FAULT);
    }
    return Bytes.of(out);
  }

  static ArrayNode bytesJson(Bytes b) {
    ArrayNode a = CanonicalJson.mapper().createArrayNode();
    for (byte x : b.toArray()) {
      a.add(x & 0xff);
    }
    return a;
  }

  ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("read", read);
    o.put("write", write);
    ArrayNode a = o.putArray("prefixes");
    prefixes.forEach(p -> a.add(bytesJson(p)));
    return o;
  }
}
