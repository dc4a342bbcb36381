package io.sandboxd.config;

import static io.sandboxd.config.ConfigText.refusal;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The `pools` and `pool_limits` keys: read strictly, refused with their JSON path. */
class PoolsConfigTest {
  static final String A = "ab".repeat(32);

  static Pools parse(String json) {
    return ConfigText.parse(json).pools();
  }

  @Test
  void defaultsAndEveryKey() {
    assertEquals(Pools.defaults(), parse("{}"));
    Pools p =
        parse(
            "{\"pools\":[{\"module\":\"b3:"
                + A
                + "\",\"min_idle\":4,\"max_idle\":32,\"ttl_ms\":300000}],"
                + "\"pool_limits\":{\"max_idle_bytes\":1048576,\"idle_estimate_mw\":5000,"
                + "\"refill_interval_ms\":50,\"adaptive\":{\"submits\":3,\"window_ms\":1000,"
                + "\"min_idle\":0,\"max_idle\":2,\"ttl_ms\":900,\"min_warmup_us\":250}}}");
    assertEquals(List.of(new Pools.Module(A, 4, 32, 300_000)), p.configured());
    assertEquals(new Pools.Adaptive(3, 1000, 0, 2, 900, 250), p.adaptive());
    assertEquals(
        Pools.MIN_WARMUP_US,
        parse("{\"pool_limits\":{\"adaptive\":{\"submits\":3}}}").adaptive().minWarmupUs());
    assertEquals(1_048_576, p.maxIdleBytes());
    assertEquals(5000, p.idleEstimateMw());
    assertEquals(50, p.tickMs());
  }

  @Test
  void badInputIsRefusedWithItsPath() {
    assertTrue(
        refusal("{\"pools\":[{\"module\":\"" + A + "\",\"min\":1}]}").contains("$.pools[0]"));
    assertTrue(refusal("{\"pools\":[{\"module\":\"" + A + "\",\"min\":1}]}").contains("min"));
    assertTrue(refusal("{\"pools\":[{\"min_idle\":1}]}").contains("$.pools[0].module"));
    assertTrue(refusal("{\"pools\":[{\"module\":\"xyz\"}]}").contains("$.pools[0].module"));
    assertTrue(
        refusal("{\"pools\":[{\"module\":\"" + A + "\",\"min_idle\":5,\"max_idle\":2}]}")
            .contains("$.pools[0].max_idle"));
    assertTrue(
        refusal("{\"pools\":[{\"module\":\"" + A + "\"},{\"module\":\"b3:" + A + "\"}]}")
            .contains("$.pools[1].module"));
    assertTrue(refusal("{\"pools\":{}}").contains("$.pools"));
    assertTrue(refusal("{\"pool_limits\":{\"ceiling\":1}}").contains("ceiling"));
    assertTrue(
        refusal("{\"pool_limits\":{\"adaptive\":{\"submits\":-1}}}")
            .contains("$.pool_limits.adaptive.submits"));
    assertTrue(
        refusal("{\"pool_limits\":{\"adaptive\":{\"min_warmup_us\":-1}}}")
            .contains("$.pool_limits.adaptive.min_warmup_us"));
    assertTrue(
        refusal("{\"pool_limits\":{\"adaptive\":{\"min_warmup_us\":60000001}}}")
            .contains("$.pool_limits.adaptive.min_warmup_us"));
    assertTrue(
        refusal("{\"pool_limits\":{\"max_idle_bytes\":1.5}}")
            .contains("$.pool_limits.max_idle_bytes"));
  }
}
