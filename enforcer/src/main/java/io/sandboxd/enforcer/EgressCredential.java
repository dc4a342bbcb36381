package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.JsonReader;
import java.util.Set;

/**
 * A secret the host injects into egress to one endpoint; {@code secretRef} is an opaque host-side
 * handle (e.g. {@code vault:key-name}), never the secret itself.
 */
public record EgressCredential(Endpoint endpoint, String secretRef, Injection inject) {

  private static final Set<String> FIELDS = Set.of("endpoint", "secret_ref", "inject");

  static EgressCredential parse(JsonNode node, String path) {
    JsonReader f = JsonReader.of(node, path, FIELDS, GrantsException.FAULT);
    Endpoint endpoint =
        NetworkGrant.endpoint(f.optional("endpoint").orElse(null), f.pathOf("endpoint"));
    String ref = f.string("secret_ref");
    if (ref.isEmpty()) {
      throw new GrantsException(f.pathOf("secret_ref"), "empty secret handle");
    }
    JsonNode inject = f.optional("inject").orElse(null);
    return new EgressCredential(endpoint, ref, Injection.parse(inject, f.pathOf("inject")));
  }

  ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("endpoint", endpoint.toString());
    o.put("secret_ref", secretRef);
    o.set("inject", inject.toJson());
    return o;
  }
}
