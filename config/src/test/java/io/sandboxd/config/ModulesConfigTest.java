package io.sandboxd.config;

import static io.sandboxd.config.ConfigText.parse;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
    String unknown =
        assertThrows(ConfigException.class, () -> parse("{\"modules\":{\"max_byte\":1}}"))
            .getMessage();
    assertTrue(unknown.contains("$.modules.max_byte"), unknown);
    String zero =
        assertThrows(
                ConfigException.class, () -> parse("{\"modules\":{\"factory_cache_entries\":0}}"))
            .getMessage();
    assertTrue(zero.contains("$.modules.factory_cache_entries"), zero);
    String big =
        assertThrows(
                ConfigException.class, () -> parse("{\"modules\":{\"max_bytes\":1099511627776}}"))
            .getMessage();
    assertTrue(big.contains("$.modules.max_bytes"), big);
  }
}
