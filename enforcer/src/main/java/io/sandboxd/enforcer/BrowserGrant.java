package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.JsonReader;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/** Browser automation: the switch, the origin allowlist, and whether rendering stays off-screen. */
public record BrowserGrant(boolean enabled, List<Origin> origins, boolean headless) {

  private static final Set<String> FIELDS = Set.of("enabled", "origins", "headless");

  public BrowserGrant {
    origins = List.copyOf(new TreeSet<>(origins));
  }

  static BrowserGrant parse(JsonNode node, String path) {
    JsonReader f = JsonReader.of(node, path, FIELDS, GrantsException.FAULT);
    return new BrowserGrant(
        f.bool("enabled", false),
        f.list("origins", GrantsException.element(Origin::parse)),
        f.bool("headless", false));
  }

  ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("enabled", enabled);
    Grants.putTexts(o, "origins", origins, Origin::toString);
    o.put("headless", headless);
    return o;
  }
}
