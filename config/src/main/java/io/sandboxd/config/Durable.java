package io.sandboxd.config;

import io.sandboxd.attest.Hex;
import io.sandboxd.attest.JsonReader;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Durable runs (top-level {@code durable}): when the daemon parks a run instead of killing it, and
 * whose bundles it imports.
 *
 * @param parkOnStop {@code park_on_stop}: a stopping daemon parks what can be parked
 * @param trustedNodes {@code trusted_nodes}: the node keys (Ed25519 public keys, 64 lowercase hex)
 *     whose signatures an imported run's chain may carry; empty: the check is off and any
 *     self-consistent bundle is imported (as before issue 23)
 */
public record Durable(boolean parkOnStop, List<String> trustedNodes) {
  public Durable {
    trustedNodes = List.copyOf(trustedNodes);
  }

  public static Durable defaults() {
    return new Durable(true, List.of());
  }

  /** Reads the {@code durable} section of {@code config}; an absent one reads as the defaults. */
  static Durable parse(JsonReader config) {
    JsonReader r = config.objectOrEmpty("durable", Set.of("park_on_stop", "trusted_nodes"));
    List<String> keys = r.strings("trusted_nodes", List.of());
    List<String> out = new ArrayList<>();
    for (int i = 0; i < keys.size(); i++) {
      String k = keys.get(i);
      if (!Hex.isHex(k, 32) || !k.equals(k.toLowerCase(java.util.Locale.ROOT))) {
        throw new ConfigException(
            "$.durable.trusted_nodes["
                + i
                + "]: \""
                + k
                + "\" is not a node key (64 lowercase hex, as `sandboxctl status` shows)");
      }
      out.add(k);
    }
    return new Durable(r.bool("park_on_stop", defaults().parkOnStop()), out);
  }
}
