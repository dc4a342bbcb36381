package io.sandboxd.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The metrics endpoint's configuration: off by default, loopback only, named faults. */
class MetricsConfigTest {
  static DaemonConfig parse(String json) {
    return DaemonConfig.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  static String refused(String json) {
    return assertThrows(ConfigException.class, () -> parse(json)).getMessage();
  }

  @Test
  void offUnlessConfigured() {
    assertEquals(Optional.empty(), DaemonConfig.defaults().metrics().listen());
    assertEquals(Optional.empty(), parse("{}").metrics().listen());
    assertEquals(Optional.empty(), parse("{\"metrics\":{}}").metrics().listen());
  }

  @Test
  void loopbackAddressesAreTaken() {
    InetSocketAddress a =
        parse("{\"metrics\":{\"listen\":\"127.0.0.1:9464\"}}").metrics().listen().orElseThrow();
    assertEquals("127.0.0.1", a.getAddress().getHostAddress());
    assertEquals(9464, a.getPort());
    assertTrue(parse("{\"metrics\":{\"listen\":\"127.8.9.10:0\"}}").metrics().listen().isPresent());
    assertTrue(
        parse("{\"metrics\":{\"listen\":\"[::1]:9464\"}}")
            .metrics()
            .listen()
            .orElseThrow()
            .getAddress()
            .isLoopbackAddress());
    assertTrue(
        parse("{\"metrics\":{\"listen\":\"localhost:9464\"}}")
            .metrics()
            .listen()
            .orElseThrow()
            .getAddress()
            .isLoopbackAddress());
  }

  @Test
  void otherAddressesAreRefusedNamingTheField() {
    for (String bad :
        new String[] {"0.0.0.0:9464", "10.1.2.3:9464", "[::]:9464", "192.168.0.1:80"}) {
      String said = refused("{\"metrics\":{\"listen\":\"" + bad + "\"}}");
      assertTrue(said.startsWith("$.metrics.listen: "), said);
      assertTrue(said.contains("not a loopback address"), said);
    }
    assertTrue(
        refused("{\"metrics\":{\"listen\":\"example.com:9464\"}}")
            .contains("names are not resolved"));
    assertTrue(refused("{\"metrics\":{\"listen\":\"127.0.0.1\"}}").contains("expected host:port"));
    assertTrue(refused("{\"metrics\":{\"listen\":\"127.0.0.1:99999\"}}").contains("out of range"));
    assertTrue(refused("{\"metrics\":{\"listen\":\"127.0.0.1:http\"}}").contains("not a number"));
    assertTrue(refused("{\"metrics\":{\"port\":9464}}").contains("$.metrics"));
  }
}
