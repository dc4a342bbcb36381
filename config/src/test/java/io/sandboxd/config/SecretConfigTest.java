package io.sandboxd.config;

import static io.sandboxd.config.ConfigText.parse;
import static io.sandboxd.config.ConfigText.refusal;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.enforcer.Endpoint;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The `secrets` section: where each node secret comes from and where it may go. */
class SecretConfigTest {
  @Test
  void aSecretIsReadWithItsSourceAndBoundEndpoints() {
    DaemonConfig c =
        parse(
            "{\"secrets\":{\"vault:api\":{\"file\":\"api.key\",\"endpoints\":"
                + "[\"https://API.example.com/v1\",\"http://127.0.0.1:8080/\"]},"
                + "\"env:tok\":{\"env\":\"TOKEN\",\"endpoints\":[\"https://x.org:8443/a/\"]}}}");
    DaemonConfig.Secret api = c.secrets().get("vault:api");
    assertEquals(new DaemonConfig.SecretSource.File(Path.of("api.key")), api.source());
    assertEquals("https://api.example.com:443/v1", api.endpoints().get(0).toString());
    assertEquals(new DaemonConfig.SecretSource.Env("TOKEN"), c.secrets().get("env:tok").source());
    assertTrue(
        c.secretBindings()
            .permits("vault:api", "https", Endpoint.parse("api.example.com:443"), "/v1/chat"));
    assertTrue(parse("{}").secrets().isEmpty());
  }

  @Test
  void aBadBindingIsRefusedNamingTheField() {
    assertTrue(
        refusal("{\"secrets\":{\"k\":{\"file\":\"f\"}}}").startsWith("$.secrets.k.endpoints"));
    assertTrue(
        refusal(
                "{\"secrets\":{\"k\":{\"file\":\"f\",\"env\":\"E\",\"endpoints\":[\"http://h/\"]}}}")
            .startsWith("$.secrets.k: give exactly one"));
    assertTrue(
        refusal("{\"secrets\":{\"k\":{\"env\":\"E\",\"endpoints\":[\"ftp://h/\"]}}}")
            .startsWith("$.secrets.k.endpoints[0]"));
    assertTrue(
        refusal("{\"secrets\":{\"k\":{\"env\":\"E\",\"endpoints\":[\"http://h/a?b=1\"]}}}")
            .startsWith("$.secrets.k.endpoints[0]"));
    assertTrue(
        refusal("{\"secrets\":{\"k\":{\"env\":\"E\",\"endpoints\":[\"http://h/a/../b\"]}}}")
            .startsWith("$.secrets.k.endpoints[0]"));
    assertTrue(
        refusal("{\"secrets\":{\"k\":{\"env\":\"E\",\"endpoints\":[],\"x\":1}}}")
            .startsWith("$.secrets.k.x: unknown field"));
    assertTrue(refusal("{\"secrets\":[]}").startsWith("$.secrets"));
  }
}
