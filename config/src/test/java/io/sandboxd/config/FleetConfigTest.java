package io.sandboxd.config;

import static io.sandboxd.config.ConfigText.parse;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The fleet shipping fields of {@code fleet} (issue 14 item 3). */
class FleetConfigTest {
  private static final String KEY = "ab".repeat(32);

  @Test
  void defaultsShipNothing() {
    Fleet f = parse("{}").fleet();
    assertEquals(Optional.empty(), f.nats());
    assertEquals(Fleet.DEFAULT_ORIGIN, f.origin());
    assertEquals(3, f.replicas());
  }

  @Test
  void natsWithTheAggregatorKeyParses() {
    Fleet f =
        parse(
                "{\"fleet\":{\"nats\":\"nats://127.0.0.1:4222\",\"aggregator_key\":\""
                    + KEY
                    + "\",\"origin\":\"ours\",\"replicas\":1}}")
            .fleet();
    assertEquals(Optional.of("nats://127.0.0.1:4222"), f.nats());
    assertEquals(Optional.of(KEY), f.aggregatorKey());
    assertEquals("ours", f.origin());
    assertEquals(1, f.replicas());
  }

  @Test
  void badFleetFieldsAreRefusedNamingTheField() {
    ConfigException noKey =
        assertThrows(
            ConfigException.class, () -> parse("{\"fleet\":{\"nats\":\"nats://127.0.0.1:4222\"}}"));
    assertTrue(noKey.getMessage().contains("$.fleet.aggregator_key"), noKey.getMessage());
    ConfigException badKey =
        assertThrows(
            ConfigException.class, () -> parse("{\"fleet\":{\"aggregator_key\":\"XYZ\"}}"));
    assertTrue(badKey.getMessage().contains("aggregator_key"), badKey.getMessage());
    ConfigException replicas =
        assertThrows(ConfigException.class, () -> parse("{\"fleet\":{\"replicas\":9}}"));
    assertTrue(replicas.getMessage().contains("replicas"), replicas.getMessage());
    ConfigException unknown =
        assertThrows(ConfigException.class, () -> parse("{\"fleet\":{\"natz\":\"x\"}}"));
    assertTrue(unknown.getMessage().contains("natz"), unknown.getMessage());
  }
}
