package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** grants_id depends on the grant, not on key order, whitespace, set order or explicit nulls. */
class GrantsIdPropertiesTest {

  @Provide
  Arbitrary<ObjectNode> grants() {
    Arbitrary<List<String>> devices =
        Arbitraries.of("Cpu", "Simd", "Gpu", "Npu", "Tpu", "Lpu", "Photonic", "Quantum")
            .list()
            .ofMaxSize(4);
    Arbitrary<List<String>> globs =
        Arbitraries.of("a/**", "b/*", "*.txt", "**", "/x/y", "c/*/d").list().ofMaxSize(4);
    Arbitrary<List<String>> endpoints =
        Arbitraries.of("a.example:443", "B.example:80", "[::1]:8080", "10.0.0.1:5432")
            .list()
            .ofMaxSize(3);
    Arbitrary<Long> budget = Arbitraries.longs().between(0, JsonFields.MAX_U64);
    Arbitrary<Boolean> bool = Arbitraries.of(true, false);
    Arbitrary<Long> ceiling = Arbitraries.longs().between(-1, 1_000_000); // -1 = unset
    return Combinators.combine(devices, globs, globs, endpoints, budget, bool, bool, ceiling)
        .as(
            (d, r, w, out, b, kvRead, clock, iops) -> {
              ObjectNode g = CanonicalJson.mapper().createObjectNode();
              ObjectNode c = g.putObject("compute");
              d.forEach(c.putArray("devices")::add);
              c.put("energy_budget_uj", b);
              c.put("cpu_time_ms", b / 2);
              ObjectNode s = g.putObject("storage");
              r.forEach(s.putArray("read")::add);
              w.forEach(s.putArray("write")::add);
              if (iops >= 0) {
                s.put("max_iops", iops);
              }
              ObjectNode n = g.putObject("network");
              out.forEach(n.putArray("outbound")::add);
              ObjectNode kv = g.putObject("kv");
              kv.put("read", kvRead);
              ArrayNode p = kv.putArray("prefixes");
              p.addArray().add(117).add(115);
              p.addArray().add(1);
              g.putObject("host").put("clock", clock);
              if (kvRead) {
                g.putObject("process").put("exec", true).putArray("programs").add("ls").add("cat");
              }
              return g;
            });
  }

  @Property(tries = 300)
  void idIgnoresKeyOrderWhitespaceSetOrderAndNulls(
      @ForAll("grants") ObjectNode grant, @ForAll long seed) throws Exception {
    Grants g = Grants.parse(grant);
    JsonNode shuffled = shuffle(grant, new Random(seed));
    ((ObjectNode) shuffled.get("storage")).putNull("max_read_bps");
    ((ObjectNode) shuffled).putNull("flow");
    String pretty =
        CanonicalJson.mapper().writerWithDefaultPrettyPrinter().writeValueAsString(shuffled);
    Grants h = Grants.parse(pretty.getBytes(StandardCharsets.UTF_8));
    assertEquals(g.grantsId(), h.grantsId());
    assertArrayEquals(g.canonicalBytes(), h.canonicalBytes());
    assertEquals(g, h);
  }

  @Property(tries = 300)
  void canonicalBytesAreAFixedPoint(@ForAll("grants") ObjectNode grant) {
    Grants g = Grants.parse(grant);
    byte[] once = g.canonicalBytes();
    assertArrayEquals(once, Grants.parse(once).canonicalBytes());
    assertArrayEquals(once, CanonicalJson.canonicalize(once));
    assertTrue(g.grantsId().matches("[0-9a-f]{64}"));
  }

  @Property(tries = 200)
  void anyBudgetChangeChangesTheId(@ForAll("grants") ObjectNode grant) {
    Grants g = Grants.parse(grant);
    ObjectNode changed = grant.deepCopy();
    ObjectNode c = (ObjectNode) changed.get("compute");
    long b = c.get("energy_budget_uj").longValue();
    c.put("energy_budget_uj", b == 0 ? 1 : b - 1);
    assertNotEquals(g.grantsId(), Grants.parse(changed).grantsId());
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
