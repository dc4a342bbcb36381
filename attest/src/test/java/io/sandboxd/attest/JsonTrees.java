package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.function.Supplier;

/** Seeded JSON trees for the canonical-JSON properties, from the leaves and names a test makes. */
final class JsonTrees {
  private JsonTrees() {}

  /**
   * A tree at most {@code depth} deep: a leaf {@code leafWeight} times as often as an array or an
   * object, each of up to four members (a repeated name keeps its last value, as in JSON text).
   */
  static JsonNode tree(
      Seeded g, int depth, int leafWeight, Supplier<JsonNode> leaf, Supplier<String> name) {
    int kind = depth == 0 ? 0 : g.random().nextInt(leafWeight + 2);
    if (kind == leafWeight) {
      ArrayNode a = JsonNodeFactory.instance.arrayNode();
      g.list(0, 4, () -> tree(g, depth - 1, leafWeight, leaf, name)).forEach(a::add);
      return a;
    }
    if (kind == leafWeight + 1) {
      ObjectNode o = JsonNodeFactory.instance.objectNode();
      for (String key : g.list(0, 4, name)) {
        o.set(key, tree(g, depth - 1, leafWeight, leaf, name));
      }
      return o;
    }
    return leaf.get();
  }
}
