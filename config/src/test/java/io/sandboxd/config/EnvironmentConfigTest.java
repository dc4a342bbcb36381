package io.sandboxd.config;

import static io.sandboxd.config.ConfigText.parse;
import static io.sandboxd.config.ConfigText.refusal;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The `environments` and `bind_allow` keys: what the node offers and what binds may name. */
class EnvironmentConfigTest {
  @Test
  void environmentsAndBindAllowAreRead() {
    DaemonConfig c =
        parse(
            "{\"environments\":[{\"name\":\"py312\",\"devcontainer\":\"/etc/sandboxd/env/py.json\"},"
                + "{\"name\":\"node-20\",\"devcontainer\":\"/etc/sandboxd/env/node.json\"}],"
                + "\"bind_allow\":[\"/srv/data\"]}");
    assertEquals(
        List.of(
            new DaemonConfig.Environments.Offered("py312", Path.of("/etc/sandboxd/env/py.json")),
            new DaemonConfig.Environments.Offered(
                "node-20", Path.of("/etc/sandboxd/env/node.json"))),
        c.environments().offered());
    assertEquals(List.of(Path.of("/srv/data")), c.environments().bindAllow());
    assertEquals(DaemonConfig.Environments.none(), parse("{}").environments());
    assertEquals(DaemonConfig.Environments.none(), DaemonConfig.defaults().environments());
  }

  @Test
  void aBadEntryIsRefusedNamingIt() {
    assertTrue(
        refusal("{\"environments\":[{\"name\":\"b3:x\",\"devcontainer\":\"/a.json\"}]}")
            .startsWith("$.environments[0].name"));
    assertTrue(
        refusal("{\"environments\":[{\"name\":\"a\",\"devcontainer\":\"rel.json\"}]}")
            .startsWith("$.environments[0].devcontainer"));
    assertTrue(
        refusal("{\"environments\":[{\"name\":\"a\"}]}")
            .startsWith("$.environments[0].devcontainer"));
    assertTrue(
        refusal(
                "{\"environments\":[{\"name\":\"a\",\"devcontainer\":\"/a.json\",\"image\":\"x\"}]}")
            .contains("$.environments[0].image"));
    assertTrue(
        refusal(
                "{\"environments\":[{\"name\":\"a\",\"devcontainer\":\"/a.json\"},"
                    + "{\"name\":\"a\",\"devcontainer\":\"/b.json\"}]}")
            .startsWith("$.environments[1].name"));
    assertTrue(refusal("{\"environments\":{}}").startsWith("$.environments"));
    assertTrue(refusal("{\"bind_allow\":[\"srv\"]}").startsWith("$.bind_allow[0]"));
    assertTrue(refusal("{\"bind_allow\":[\"/srv/../etc\"]}").startsWith("$.bind_allow[0]"));
    assertTrue(refusal("{\"bind_allow\":[\"/srv\",7]}").startsWith("$.bind_allow[1]"));
  }
}
