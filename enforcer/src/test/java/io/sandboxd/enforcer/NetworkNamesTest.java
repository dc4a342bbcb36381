package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Endpoint and origin normalization (WIRE.md §3.2, Q14). */
class NetworkNamesTest {

  @ParameterizedTest
  @CsvSource({
    "API.Example.com:443, api.example.com:443",
    "a.example:00080, a.example:80",
    "[::1]:80, [::1]:80",
    "[0:0:0:0:0:0:0:1]:80, [::1]:80",
    "[2001:DB8::0001]:443, [2001:db8::1]:443",
    "[2001:db8:0:0:1:0:0:1]:1, [2001:db8::1:0:0:1]:1",
    "[2001:db8:0:1:1:1:1:1]:1, [2001:db8:0:1:1:1:1:1]:1",
    "[::ffff:192.0.2.1]:9, [::ffff:c000:201]:9",
    "[1::]:9, [1::]:9",
    "10.0.0.1:5432, 10.0.0.1:5432",
  })
  void endpointsNormalize(String in, String out) {
    assertEquals(out, Endpoint.parse(in).toString());
    assertEquals(out, Endpoint.parse(out).toString());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "host",
        "host:",
        ":443",
        "host:0",
        "host:65536",
        "host:-1",
        "host:4 3",
        "::1:443",
        "[::1]",
        "[::1:443",
        "[1::2::3]:1",
        "[12345::]:1",
        "[::1%eth0]:1",
        "a..b:1",
        "-a.b:1",
        "a b:1",
        "ex\u00e4mple.com:1",
        "256.0.0.1:1",
        "01.2.3.4:1",
        "1.2.3:1"
      })
  void malformedEndpointsAreRefused(String in) {
    assertThrows(IllegalArgumentException.class, () -> Endpoint.parse(in));
  }

  @ParameterizedTest
  @CsvSource({
    "https://Example.COM, https://example.com",
    "HTTPS://example.com:443, https://example.com",
    "http://example.com:80, http://example.com",
    "http://example.com:443, http://example.com:443",
    "https://[::1]:443, https://[::1]",
    "https://[::1]:8443, https://[::1]:8443",
  })
  void originsNormalize(String in, String out) {
    assertEquals(out, Origin.parse(in).toString());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "example.com",
        "https://",
        "https://a/b",
        "https://u@a",
        "1http://a",
        "https://a:0"
      })
  void malformedOriginsAreRefused(String in) {
    assertThrows(IllegalArgumentException.class, () -> Origin.parse(in));
  }

  @ParameterizedTest
  @CsvSource({"https://a.example/x?y#z, https://a.example", "http://A:8080/, http://a:8080"})
  void navigationTargetsReduceToTheirOrigin(String url, String origin) {
    assertEquals(origin, Origin.ofUrl(url).toString());
  }
}
