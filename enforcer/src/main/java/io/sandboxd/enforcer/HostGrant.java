package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.JsonReader;
import java.util.Set;

/** Which host services a unit may call: logging, the wall clock, randomness, inference. */
public record HostGrant(boolean logging, boolean clock, boolean random, boolean inference) {

  private static final Set<String> FIELDS = Set.of("logging", "clock", "random", "inference");

  /** No host services. */
  public static HostGrant empty() {
    return new HostGrant(false, false, false, false);
  }

  /** The flag for {@code service}. */
  public boolean allows(HostService service) {
    return switch (service) {
      case LOGGING -> logging;
      case CLOCK -> clock;
      case RANDOM -> random;
      case INFERENCE -> inference;
    };
  }

  static HostGrant parse(JsonNode node, String path) {
    JsonReader f = JsonReader.of(node, path, FIELDS, GrantsException.FAULT);
    return new HostGrant(
        f.bool("logging", false),
        f.bool("clock", false),
        f.bool("random", false),
        f.bool("inference", false));
  }

  ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("logging", logging);
    o.put("clock", clock);
    o.put("random", random);
    o.put("inference", inference);
    return o;
  }
}
