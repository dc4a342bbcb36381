package io.sandboxd.config;

import static io.sandboxd.config.ConfigText.parse;
import static io.sandboxd.config.ConfigText.refusal;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ModulesConfigTest {
  @Test
  void modulesAreReadAndDefaulted() {
    assertEquals(DaemonConfig.Modules.defaults(), parse("{}").modules());
    DaemonConfig c =
        parse("{\"modules\":{\"max_bytes\":4096,\"max_modules\":7,\"factory_cache_entries\":3}}");
    assertEquals(new DaemonConfig.Modules(4096, 7, 3), c.modules());
    assertEquals(
        new DaemonConfig.Modules(4096, 4096, 256),
        parse("{\"modules\":{\"max_bytes\":4096}}").modules());
  }

  @Test
  void unknownAndOutOfRangeModuleFieldsAreRefusedWithTheirPath() {
    String unknown = refusal("{\"modules\":{\"max_byte\":1}}");
    assertTrue(unknown.contains("$.modules.max_byte"), unknown);
    String zero = refusal("{\"modules\":{\"factory_cache_entries\":0}}");
    assertTrue(zero.contains("$.modules.factory_cache_entries"), zero);
    String big = refusal("{\"modules\":{\"max_bytes\":1099511627776}}");
    assertTrue(big.contains("$.modules.max_bytes"), big);
  }
}
