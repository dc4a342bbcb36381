package io.sandboxd.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.JsonReader;
import java.util.Optional;
import java.util.Set;

/**
 * Fleet records (top-level {@code fleet}): where the node ships its log.
 *
 * @param nats {@code nats}: the JetStream server URL, absent when the node ships nothing
 * @param aggregatorKey {@code aggregator_key}: hex Ed25519 key of the fleet aggregator whose proofs
 *     the node accepts (required with {@code nats})
 * @param origin {@code origin}: the fleet log's name, the origin line of its checkpoints
 * @param replicas {@code replicas}: JetStream replicas of the fleet streams (1..5)
 */
public record Fleet(
    Optional<String> nats, Optional<String> aggregatorKey, String origin, int replicas) {
  public static final String DEFAULT_ORIGIN = "sandboxd.fleet";

  /** The form before the shipping fields. */
  public Fleet(Optional<String> nats) {
    this(nats, Optional.empty(), DEFAULT_ORIGIN, 3);
  }

  public static Fleet defaults() {
    return new Fleet(Optional.empty());
  }

  static Fleet parse(JsonNode node) {
    if (node == null || node.isNull()) {
      return defaults();
    }
    JsonReader r =
        JsonReader.of(
            node,
            "$.fleet",
            Set.of("nats", "aggregator_key", "origin", "replicas"),
            ConfigException.FAULT);
    Optional<String> nats = Optional.ofNullable(r.string("nats", null));
    Optional<String> key = Optional.ofNullable(r.string("aggregator_key", null));
    if (key.isPresent() && !key.get().matches("[0-9a-f]{64}")) {
      throw ConfigException.FAULT.at("$.fleet.aggregator_key", "expected 64 lowercase hex");
    }
    if (nats.isPresent() && key.isEmpty()) {
      throw ConfigException.FAULT.at(
          "$.fleet.aggregator_key",
          "required with nats: the node keeps records until this key's proofs come back");
    }
    String origin = r.string("origin", DEFAULT_ORIGIN);
    int replicas = (int) r.integer("replicas", 3, 1, 5);
    return new Fleet(nats, key, origin, replicas);
  }
}
