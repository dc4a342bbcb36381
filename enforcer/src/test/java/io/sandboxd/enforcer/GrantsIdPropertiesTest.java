package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Seeded;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** grants_id depends on the grant, not on key order, whitespace, set order or explicit nulls. */
class GrantsIdPropertiesTest {

  private static final String[] GLOBS = {"a/**", "b/*", "*.txt", "**", "/x/y", "c/*/d"};

  /** A grant with every section, its sets and numbers drawn (budgets up to 2^53-1). */
  static ObjectNode grants(Seeded g) {
    List<String> d =
        g.list(
            0, 4, () -> g.pick("Cpu", "Simd", "Gpu", "Npu", "Tpu", "Lpu", "Photonic", "Quantum"));
    List<String> r = g.list(0, 4, () -> g.pick(GLOBS));
    List<String> w = g.list(0, 4, () -> g.pick(GLOBS));
    List<String> out =
        g.list(0, 3, () -> g.pick("a.example:443", "B.example:80", "[::1]:8080", "10.0.0.1:5432"));
    long b = g.longBetween(0, io.sandboxd.attest.JsonReader.MAX_U64);
    boolean kvRead = g.bool();
    boolean clock = g.bool();
    long iops = g.longBetween(-1, 1_000_000); // -1 = unset
    ObjectNode grant = CanonicalJson.mapper().createObjectNode();
    ObjectNode c = grant.putObject("compute");
    d.forEach(c.putArray("devices")::add);
    c.put("energy_budget_uj", b);
    c.put("cpu_time_ms", b / 2);
    ObjectNode s = grant.putObject("storage");
    r.forEach(s.putArray("read")::add);
    w.forEach(s.putArray("write")::add);
    if (iops >= 0) {
      s.put("max_iops", iops);
    }
    ObjectNode n = grant.putObject("network");
    out.forEach(n.putArray("outbound")::add);
    ObjectNode kv = grant.putObject("kv");
    kv.put("read", kvRead);
    ArrayNode p = kv.putArray("prefixes");
    p.addArray().add(117).add(115);
    p.addArray().add(1);
    grant.putObject("host").put("clock", clock);
    if (kvRead) {
      grant.putObject("process").put("exec", true).putArray("programs").add("ls").add("cat");
    }
    return grant;
  }

  /** A property of a seeded grant document and the grant set it parses to. */
  private interface GrantProperty {
    void check(Seeded gen, ObjectNode grant, Grants g) throws Exception;
  }

  /** Checks {@code property} on {@code tries} seeded grant documents. */
  private static void forGrants(int tries, GrantProperty property) {
    Seeded.repeat(
        tries,
        gen -> {
          ObjectNode grant = grants(gen);
          property.check(gen, grant, Grants.parse(grant));
        });
  }

  @Test
  void idIgnoresKeyOrderWhitespaceSetOrderAndNulls() {
    forGrants(
        300,
        (gen, grant, g) -> {
          JsonNode shuffled = shuffle(grant, gen.random());
          ((ObjectNode) shuffled.get("storage")).putNull("max_read_bps");
          ((ObjectNode) shuffled).putNull("flow");
          String pretty =
              CanonicalJson.mapper().writerWithDefaultPrettyPrinter().writeValueAsString(shuffled);
          Grants h = Grants.parse(pretty.getBytes(StandardCharsets.UTF_8));
          assertEquals(g.grantsId(), h.grantsId());
          assertArrayEquals(g.canonicalBytes(), h.canonicalBytes());
          assertEquals(g, h);
        });
  }

  @Test
  void canonicalBytesAreAFixedPoint() {
    forGrants(
        300,
        (gen, grant, g) -> {
          byte[] once = g.canonicalBytes();
          assertArrayEquals(once, Grants.parse(once).canonicalBytes());
          assertArrayEquals(once, CanonicalJson.canonicalize(once));
          assertTrue(g.grantsId().matches("[0-9a-f]{64}"));
        });
  }

  @Test
  void anyBudgetChangeChangesTheId() {
    forGrants(
        200,
        (gen, grant, g) -> {
          ObjectNode changed = grant.deepCopy();
          ObjectNode c = (ObjectNode) changed.get("compute");
          long b = c.get("energy_budget_uj").longValue();
          c.put("energy_budget_uj", b == 0 ? 1 : b - 1);
          assertNotEquals(g.grantsId(), Grants.parse(changed).grantsId());
        });
  }

  /** A copy with object keys inserted in a random order and array elements shuffled. */
  private static JsonNode shuffle(JsonNode node, Random rnd) {
    if (node.isObject()) {
      List<Map.Entry<String, JsonNode>> fields = new ArrayList<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        fields.add(it.next());
      }
      Collections.shuffle(fields, rnd);
      ObjectNode o = CanonicalJson.mapper().createObjectNode();
      fields.forEach(e -> o.set(e.getKey(), shuffle(e.getValue(), rnd)));
      return o;
    }
    if (node.isArray()) {
      List<JsonNode> items = new ArrayList<>();
      node.forEach(items::add);
      // a byte string is a value, not a set: only arrays of non-numbers are shuffled
      if (!items.isEmpty() && !items.get(0).isNumber()) {
        Collections.shuffle(items, rnd);
      }
      ArrayNode a = CanonicalJson.mapper().createArrayNode();
      items.forEach(i -> a.add(shuffle(i, rnd)));
      return a;
    }
    return node;
  }
}
