package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A node secret goes only to the targets the node bound it to. */
class SecretBindingsTest {
  static final SecretBindings BINDINGS =
      new SecretBindings(
          Map.of(
              "vault:api",
              List.of(
                  SecretTarget.parse("https://api.example.com/v1"),
                  SecretTarget.parse("http://127.0.0.1:8080/"))));

  static NetworkGrant network(String endpoint, String ref) {
    String json =
        "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1,\"cpu_time_ms\":1,\"memory_bytes\":1},"
            + "\"storage\":{\"read\":[],\"write\":[],\"delete\":[]},\"network\":{\"outbound\":[\""
            + endpoint
            + "\"],\"inbound\":false,\"credentials\":[{\"endpoint\":\""
            + endpoint
            + "\",\"secret_ref\":\""
            + ref
            + "\",\"inject\":{\"Header\":{\"name\":\"Authorization\",\"prefix\":\"\"}}}]},"
            + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
            + "\"host\":{\"logging\":false,\"clock\":false,\"random\":false,\"inference\":false}}";
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8)).network();
  }

  @Test
  void admissionRefusesASecretBoundElsewhereOrNowhere() {
    BINDINGS.check(network("api.example.com:443", "vault:api"));
    BINDINGS.check(network("127.0.0.1:8080", "vault:api"));
    GrantsException elsewhere =
        assertThrows(
            GrantsException.class, () -> BINDINGS.check(network("evil.example:443", "vault:api")));
    assertEquals("$.network.credentials[0].endpoint", elsewhere.path());
    assertTrue(elsewhere.getMessage().contains("vault:api"), elsewhere.getMessage());
    GrantsException unbound =
        assertThrows(
            GrantsException.class,
            () -> BINDINGS.check(network("api.example.com:443", "vault:other")));
    assertEquals("$.network.credentials[0].secret_ref", unbound.path());
    assertTrue(unbound.getMessage().contains("vault:other"));
    assertThrows(
        GrantsException.class,
        () -> SecretBindings.none().check(network("api.example.com:443", "vault:api")));
  }

  @Test
  void aRequestMatchesOnlyItsSchemeEndpointAndWholePathSegments() {
    Endpoint api = Endpoint.parse("api.example.com:443");
    assertTrue(BINDINGS.permits("vault:api", "https", api, "/v1"));
    assertTrue(BINDINGS.permits("vault:api", "HTTPS", api, "/v1/chat/x"));
    for (String path : List.of("/v1x", "/", "", "/v2", "/v1/../admin", "/v1/%2e%2e/a", "/v1//x")) {
      assertFalse(BINDINGS.permits("vault:api", "https", api, path), path);
    }
    assertFalse(
        BINDINGS.permits("vault:api", "http", Endpoint.parse("api.example.com:443"), "/v1"));
    assertFalse(BINDINGS.permits("vault:other", "https", api, "/v1"));
    assertTrue(BINDINGS.permits("vault:api", "http", Endpoint.parse("127.0.0.1:8080"), ""));
  }
}
