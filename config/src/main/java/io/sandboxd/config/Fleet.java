package io.sandboxd.config;

import io.sandboxd.attest.JsonReader;
import java.util.Optional;
import java.util.Set;

/**
 * Fleet records (top-level {@code fleet}): the node's own log and where the node ships its records.
 *
 * @param nats {@code nats}: the JetStream server URL(s), absent when the node ships nothing
 * @param aggregatorKey {@code aggregator_key}: hex Ed25519 key of the fleet aggregator whose proofs
 *     the node accepts (required with {@code nats})
 * @param origin {@code origin}: the fleet log's name, the origin line of its checkpoints
 * @param replicas {@code replicas}: JetStream replicas of the fleet streams (1..5)
 * @param checkpointEveryRecords {@code checkpoint_every_records}: the node signs a log checkpoint
 *     after at most this many new leaves (default 1024)
 * @param checkpointEveryMs {@code checkpoint_every_ms}: ... or this many ms after the last one when
 *     the log grew (default 1000)
 * @param log {@code log}: keep the node log (default true; false only to measure what it costs:
 *     records stored while it is off are never in it)
 */
public record Fleet(
    Optional<String> nats,
    Optional<String> aggregatorKey,
    String origin,
    int replicas,
    long checkpointEveryRecords,
    long checkpointEveryMs,
    boolean log) {
  public static final String DEFAULT_ORIGIN = "sandboxd.fleet";

  public static Fleet defaults() {
    return new Fleet(Optional.empty(), Optional.empty(), DEFAULT_ORIGIN, 3, 1024, 1000, true);
  }

  /** Reads the {@code fleet} section of {@code config}; an absent one reads as the defaults. */
  static Fleet parse(JsonReader config) {
    JsonReader r =
        config.objectOrEmpty(
            "fleet",
            Set.of(
                "nats",
                "aggregator_key",
                "origin",
                "replicas",
                "checkpoint_every_records",
                "checkpoint_every_ms",
                "log"));
    Fleet d = defaults();
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
    long every = r.u64("checkpoint_every_records", d.checkpointEveryRecords());
    long ms = r.u64("checkpoint_every_ms", d.checkpointEveryMs());
    if (every < 1) {
      throw new ConfigException("$.fleet.checkpoint_every_records: must be at least 1");
    }
    if (ms < 1) {
      throw new ConfigException("$.fleet.checkpoint_every_ms: must be at least 1");
    }
    return new Fleet(
        nats,
        key,
        r.string("origin", DEFAULT_ORIGIN),
        (int) r.integer("replicas", 3, 1, 5),
        every,
        ms,
        r.bool("log", d.log()));
  }
}
