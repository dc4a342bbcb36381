package io.sandboxd.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.SigningKey;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code standing.event_sources}: the keys whose signed events mint, strictly read. */
class StandingConfigTest {
  static Standing standing(String json) {
    return DaemonConfig.parse(json.getBytes(StandardCharsets.UTF_8)).standing();
  }

  @Test
  void eventSourcesAreReadAndDefaultToNone() {
    String k = SigningKey.generate().publicKey().hex();
    Standing s = standing("{\"standing\":{\"event_sources\":[\"" + k + "\"]}}");
    assertEquals(List.of(k), s.eventSources());
    assertEquals(1024, s.maxPolicies());
    assertEquals(List.of(), standing("{}").eventSources());
  }

  @Test
  void aSourceThatIsNoKeyIsRefusedNamingItsIndex() {
    String k = SigningKey.generate().publicKey().hex();
    for (String bad : List.of("ab", "zz".repeat(32), k.toUpperCase(java.util.Locale.ROOT))) {
      ConfigException e =
          assertThrows(
              ConfigException.class,
              () -> standing("{\"standing\":{\"event_sources\":[\"" + k + "\",\"" + bad + "\"]}}"));
      assertTrue(e.getMessage().startsWith("$.standing.event_sources[1]"), e.getMessage());
    }
    assertThrows(ConfigException.class, () -> standing("{\"standing\":{\"event_source\":[]}}"));
  }
}
