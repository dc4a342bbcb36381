package io.sandboxd.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@code signing.ed25519}: which engine computes the node's signatures, strictly read. */
class SigningConfigTest {
  private static Signing.Engine engine(String json) {
    return ConfigText.parse(json).signing().ed25519();
  }

  @Test
  void autoByDefaultAndEachSpellingReadsAsItsEngine() {
    assertEquals(Signing.Engine.AUTO, engine("{}"));
    assertEquals(Signing.Engine.AUTO, DaemonConfig.defaults().signing().ed25519());
    assertEquals(Signing.Engine.AUTO, engine("{\"signing\":{}}"));
    for (Signing.Engine e : Signing.Engine.values()) {
      assertEquals(e, engine("{\"signing\":{\"ed25519\":\"" + e.spelling() + "\"}}"));
    }
  }

  @Test
  void anUnknownEngineOrKeyIsRefusedNamingTheField() {
    for (String bad : new String[] {"openssl", "LIBSODIUM", "", " auto"}) {
      String why = ConfigText.refusal("{\"signing\":{\"ed25519\":\"" + bad + "\"}}");
      assertTrue(
          why.startsWith("$.signing.ed25519: expected \"auto\", \"libsodium\" or \"bouncycastle\""),
          why);
    }
    String why = ConfigText.refusal("{\"signing\":{\"ed25519\":1}}");
    assertTrue(why.startsWith("$.signing.ed25519"), why);
    why = ConfigText.refusal("{\"signing\":{\"engine\":\"auto\"}}");
    assertTrue(why.contains("engine"), why);
    why = ConfigText.refusal("{\"signing\":\"auto\"}");
    assertTrue(why.startsWith("$.signing"), why);
  }
}
