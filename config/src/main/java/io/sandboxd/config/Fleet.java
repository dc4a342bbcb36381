package io.sandboxd.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.JsonReader;
import java.util.Optional;
import java.util.Set;

/**
 * Fleet records (top-level {@code fleet}): where the node ships its log.
 *
 * @param nats {@code nats}: the JetStream server URL, absent when the node ships nothing
 */
public record Fleet(Optional<String> nats) {

  public static Fleet defaults() {
    return new Fleet(Optional.empty());
  }

  static Fleet parse(JsonNode node) {
    if (node == null || node.isNull()) {
      return defaults();
    }
    JsonReader r = JsonReader.of(node, "$.fleet", Set.of("nats"), ConfigException.FAULT);
    return new Fleet(Optional.ofNullable(r.string("nats", null)));
  }
}
