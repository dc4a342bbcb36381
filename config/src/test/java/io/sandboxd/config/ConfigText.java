package io.sandboxd.config;

import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;

/** A config document given as text, for the tests: parsed, or the message it is refused with. */
final class ConfigText {
  private ConfigText() {}

  static DaemonConfig parse(String json) {
    return DaemonConfig.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  static String refusal(String json) {
    return assertThrows(ConfigException.class, () -> parse(json)).getMessage();
  }
}
