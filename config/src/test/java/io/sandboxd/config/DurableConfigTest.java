package io.sandboxd.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code durable.trusted_nodes}: node keys, strictly read. */
class DurableConfigTest {
  static Durable durable(String json) {
    return ConfigText.parse(json).durable();
  }

  @Test
  void trustedNodesAreReadAndDefaultToNone() {
    String k = "ab".repeat(32);
    assertEquals(
        List.of(k), durable("{\"durable\":{\"trusted_nodes\":[\"" + k + "\"]}}").trustedNodes());
    assertEquals(List.of(), durable("{}").trustedNodes());
  }

  @Test
  void aKeyThatIsNotOneIsRefusedNamingItsPath() {
    for (String bad : List.of("ab", "AB".repeat(32), "zz".repeat(32))) {
      String why =
          ConfigText.refusal(
              "{\"durable\":{\"trusted_nodes\":[\"" + "ab".repeat(32) + "\",\"" + bad + "\"]}}");
      assertTrue(why.startsWith("$.durable.trusted_nodes[1]: "), why);
    }
  }
}
