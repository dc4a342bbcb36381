package io.sandboxd.config;

import static io.sandboxd.config.ConfigText.parse;
import static io.sandboxd.config.ConfigText.refusal;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The metrics endpoint's configuration: off by default, loopback only, named faults. */
class MetricsConfigTest {
  /** The address a config with {@code "listen": listen} serves metrics on. */
  private static InetSocketAddress listening(String listen) {
    return parse("{\"metrics\":{\"listen\":\"" + listen + "\"}}").metrics().listen().orElseThrow();
  }

  @Test
  void offUnlessConfigured() {
    assertEquals(Optional.empty(), DaemonConfig.defaults().metrics().listen());
    assertEquals(Optional.empty(), parse("{}").metrics().listen());
    assertEquals(Optional.empty(), parse("{\"metrics\":{}}").metrics().listen());
  }

  @Test
  void loopbackAddressesAreTaken() {
    InetSocketAddress a = listening("127.0.0.1:9464");
    assertEquals("127.0.0.1", a.getAddress().getHostAddress());
    assertEquals(9464, a.getPort());
    assertTrue(parse("{\"metrics\":{\"listen\":\"127.8.9.10:0\"}}").metrics().listen().isPresent());
    assertTrue(listening("[::1]:9464").getAddress().isLoopbackAddress());
    assertTrue(listening("localhost:9464").getAddress().isLoopbackAddress());
  }

  @Test
  void otherAddressesAreRefusedNamingTheField() {
    for (String bad :
        new String[] {"0.0.0.0:9464", "10.1.2.3:9464", "[::]:9464", "192.168.0.1:80"}) {
      String said = refusal("{\"metrics\":{\"listen\":\"" + bad + "\"}}");
      assertTrue(said.startsWith("$.metrics.listen: "), said);
      assertTrue(said.contains("not a loopback address"), said);
    }
    assertTrue(
        refusal("{\"metrics\":{\"listen\":\"example.com:9464\"}}")
            .contains("names are not resolved"));
    assertTrue(refusal("{\"metrics\":{\"listen\":\"127.0.0.1\"}}").contains("expected host:port"));
    assertTrue(refusal("{\"metrics\":{\"listen\":\"127.0.0.1:99999\"}}").contains("out of range"));
    assertTrue(refusal("{\"metrics\":{\"listen\":\"127.0.0.1:http\"}}").contains("not a number"));
    assertTrue(refusal("{\"metrics\":{\"port\":9464}}").contains("$.metrics"));
  }
}
