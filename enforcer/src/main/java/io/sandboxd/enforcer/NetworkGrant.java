package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.JsonReader;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The outbound allowlist of exact {@code host:port} endpoints, whether inbound connections are
 * allowed, and egress credentials (each for an endpoint that is also in {@code outbound}).
 */
public record NetworkGrant(
    List<Endpoint> outbound, boolean inbound, List<EgressCredential> credentials) {

  private static final Set<String> FIELDS = Set.of("outbound", "inbound", "credentials");

  public NetworkGrant {
    outbound = List.copyOf(new TreeSet<>(outbound));
    credentials = List.copyOf(credentials);
    Set<Endpoint> allowed = new HashSet<>(outbound);
    for (int i = 0; i < credentials.size(); i++) {
      if (!allowed.contains(credentials.get(i).endpoint())) {
        throw new GrantsException(
            "$.network.credentials[" + i + "].endpoint",
            "endpoint "
                + credentials.get(i).endpoint()
                + " is not in outbound; a credential never widens egress");
      }
    }
  }

  /** No egress, no inbound, no credentials. */
  public static NetworkGrant empty() {
    return new NetworkGrant(List.of(), false, List.of());
  }

  static NetworkGrant parse(JsonNode node, String path) {
    JsonReader f = JsonReader.of(node, path, FIELDS, GrantsException.FAULT);
    return new NetworkGrant(
        f.list("outbound", NetworkGrant::endpoint),
        f.bool("inbound", false),
        f.list("credentials", EgressCredential::parse));
  }

  static Endpoint endpoint(JsonNode n, String p) {
    return GrantsException.element(Endpoint::parse).apply(n, p);
  }

  ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    Grants.putTexts(o, "outbound", outbound, Endpoint::toString);
    o.put("inbound", inbound);
    // default-deny values are omitted (WIRE.md §2.0.6): no credentials, no key
    if (!credentials.isEmpty()) {
      ArrayNode c = o.putArray("credentials");
      credentials.forEach(x -> c.add(x.toJson()));
    }
    return o;
  }
}
