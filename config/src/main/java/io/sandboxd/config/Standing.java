package io.sandboxd.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.JsonReader;
import java.util.Set;

/**
 * Standing grants (top-level {@code standing}): bounds on what mint policies a node keeps.
 *
 * @param maxPolicies {@code max_policies}: most mint policies registered at once
 */
public record Standing(long maxPolicies) {

  public static Standing defaults() {
    return new Standing(1024);
  }

  static Standing parse(JsonNode node) {
    if (node == null || node.isNull()) {
      return defaults();
    }
    JsonReader r = JsonReader.of(node, "$.standing", Set.of("max_policies"), ConfigException.FAULT);
    return new Standing(r.integer("max_policies", defaults().maxPolicies(), 1, 1L << 20));
  }
}
