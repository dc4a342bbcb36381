package io.sandboxd.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.SigningKey;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code standing.event_sources}: the keys whose signed events mint, strictly read. */
class StandingConfigTest {
  static Standing standing(String json) {
    return ConfigText.parse(json).standing();
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
      String why =
          ConfigText.refusal("{\"standing\":{\"event_sources\":[\"" + k + "\",\"" + bad + "\"]}}");
      assertTrue(why.startsWith("$.standing.event_sources[1]"), why);
    }
    assertThrows(ConfigException.class, () -> standing("{\"standing\":{\"event_source\":[]}}"));
  }
}
