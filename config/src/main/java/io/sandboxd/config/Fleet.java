package io.sandboxd.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.JsonReader;
import java.util.Optional;
import java.util.Set;

/**
 * Fleet records (top-level {@code fleet}): the node log's checkpoints, and where the node ships it.
 *
 * @param nats {@code nats}: the JetStream server URL, absent when the node ships nothing
 * @param checkpointEveryRecords {@code checkpoint_every_records}: the node signs a log checkpoint
 *     after at most this many new leaves (default 1024)
 * @param checkpointEveryMs {@code checkpoint_every_ms}: ... or this many ms after the last one when
 *     the log grew (default 1000)
 * @param log {@code log}: keep the node log (default true; false only to measure what it costs:
 *     records stored while it is off are never in it)
 */
public record Fleet(
    Optional<String> nats, long checkpointEveryRecords, long checkpointEveryMs, boolean log) {

  public static Fleet defaults() {
    return new Fleet(Optional.empty(), 1024, 1000, true);
  }

  static Fleet parse(JsonNode node) {
    if (node == null || node.isNull()) {
      return defaults();
    }
    JsonReader r =
        JsonReader.of(
            node,
            "$.fleet",
            Set.of("nats", "checkpoint_every_records", "checkpoint_every_ms", "log"),
            ConfigException.FAULT);
    Fleet d = defaults();
    long every = r.u64("checkpoint_every_records", d.checkpointEveryRecords());
    long ms = r.u64("checkpoint_every_ms", d.checkpointEveryMs());
    if (every < 1) {
      throw new ConfigException("$.fleet.checkpoint_every_records: must be at least 1");
    }
    if (ms < 1) {
      throw new ConfigException("$.fleet.checkpoint_every_ms: must be at least 1");
    }
    return new Fleet(
        Optional.ofNullable(r.string("nats", null)), every, ms, r.bool("log", d.log()));
  }
}
