package io.sandboxd.config;

import io.sandboxd.attest.JsonReader;
import io.sandboxd.attest.PublicKey;
import java.util.List;
import java.util.Set;

/**
 * Standing grants (top-level {@code standing}): bounds on what mint policies a node keeps, and who
 * besides a policy's issuer may sign the events that mint under it.
 *
 * @param maxPolicies {@code max_policies}: most mint policies registered at once
 * @param eventSources {@code event_sources}: Ed25519 public keys (hex) whose signed events mint
 *     under any policy, beside each policy's issuer
 */
public record Standing(long maxPolicies, List<String> eventSources) {

  public Standing {
    eventSources = List.copyOf(eventSources);
  }

  public static Standing defaults() {
    return new Standing(1024, List.of());
  }

  /** Reads the {@code standing} section of {@code config}; an absent one reads as the defaults. */
  static Standing parse(JsonReader config) {
    JsonReader r = config.objectOrEmpty("standing", Set.of("max_policies", "event_sources"));
    List<String> sources = r.strings("event_sources", List.of());
    for (int i = 0; i < sources.size(); i++) {
      try {
        PublicKey.ofHex(sources.get(i), "$.standing.event_sources[" + i + "]");
      } catch (RuntimeException e) {
        throw new ConfigException(
            "$.standing.event_sources[" + i + "]: not an Ed25519 public key: " + e.getMessage());
      }
    }
    return new Standing(r.integer("max_policies", defaults().maxPolicies(), 1, 1L << 20), sources);
  }
}
