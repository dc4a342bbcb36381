package io.sandboxd.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.JsonReader;
import java.util.Set;

/**
 * Durable runs (top-level {@code durable}): when the daemon parks a run instead of killing it.
 *
 * @param parkOnStop {@code park_on_stop}: a stopping daemon parks what can be parked
 */
public record Durable(boolean parkOnStop) {

  public static Durable defaults() {
    return new Durable(true);
  }

  static Durable parse(JsonNode node) {
    if (node == null || node.isNull()) {
      return defaults();
    }
    JsonReader r = JsonReader.of(node, "$.durable", Set.of("park_on_stop"), ConfigException.FAULT);
    return new Durable(r.bool("park_on_stop", defaults().parkOnStop()));
  }
}
