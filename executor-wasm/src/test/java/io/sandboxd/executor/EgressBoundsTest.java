package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.sandboxd.enforcer.SecretBindings;
import io.sandboxd.enforcer.SecretTarget;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Egress against a local server: secrets go only where the node bound them and never come back to
 * the guest or the journal, and response bodies are cut off at the cap while they stream.
 */
class EgressBoundsTest {
  static final String SECRET = "Sup3r/S3cret+Token=42";
  static HttpServer server;
  static Executor executor;
  static String endpoint;
  static final AtomicReference<String> lastAuth = new AtomicReference<>();
  static final AtomicLong hugeBytesSent = new AtomicLong();

  @BeforeAll
  static void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/api/echo", ReflectingEndpoint.of(lastAuth));
    server.createContext("/api/huge", HostileResponses.hugeChunked(hugeBytesSent));
    server.createContext(
        "/api/drip",
        ex -> {
          // Headers at once, then a byte now and then: only a deadline on the whole body helps.
          ex.sendResponseHeaders(200, 0);
          try (OutputStream out = ex.getResponseBody()) {
            for (int i = 0; i < 600; i++) {
              out.write('x');
              out.flush();
              Thread.sleep(100);
            }
          } catch (IOException | InterruptedException dropped) {
            // the client gave up
          }
        });
    server.createContext("/api/declared", HostileResponses.declaredOnly(1L << 30));
    server.start();
    endpoint = "127.0.0.1:" + server.getAddress().getPort();
    SecretBindings bound =
        new SecretBindings(
            Map.of("vault:api", List.of(SecretTarget.parse("http://" + endpoint + "/api"))));
    executor =
        new Executor(
            2,
            EnergyModel.estimate(10_000),
            120_000,
            HostServices.none().withSecrets(SecretStore.of(bound, Map.of("vault:api", SECRET))));
  }

  @AfterAll
  static void stop() {
    executor.close();
    server.stop(0);
  }

  static String grants(String inject) {
    String net =
        "{\"outbound\":[\""
            + endpoint
            + "\"],\"inbound\":false,\"credentials\":[{\"endpoint\":\""
            + endpoint
            + "\",\"secret_ref\":\"vault:api\",\"inject\":"
            + inject
            + "}]}";
    return AbiTest.grants(AbiTest.NO_STORAGE, AbiTest.NO_KV, net, AbiTest.LOG);
  }

  static final String HEADER = "{\"Header\":{\"name\":\"Authorization\",\"prefix\":\"Bearer \"}}";

  static ExecutionResult egress(String path, String inject) {
    String req = "{\"method\":\"GET\",\"url\":\"http://" + endpoint + path + "\"}";
    return AbiTest.run(executor, EgressGuest.logsAnswer(req), grants(inject), null);
  }

  static void assertNoSecret(ExecutionResult r) {
    List<String> forms =
        List.of(
            SECRET,
            SECRET.toLowerCase(java.util.Locale.ROOT),
            SECRET.replace("/", "\\/"),
            java.net.URLEncoder.encode(SECRET, StandardCharsets.UTF_8),
            Base64.getEncoder().encodeToString(SECRET.getBytes(StandardCharsets.UTF_8)));
    for (String f : forms) {
      assertFalse(r.log().contains(f), "log holds " + f + ": " + r.log());
      for (byte[] blob : r.journalBlobs().values()) {
        String text = new String(blob, StandardCharsets.ISO_8859_1);
        assertFalse(text.contains(f), "journal holds " + f);
        // The guest's view of the body is base64 inside the JSON answer: decode and look again.
        int at = text.indexOf("\"body\":\"");
        if (at >= 0) {
          String b64 = text.substring(at + 8, text.indexOf('"', at + 8));
          String body = new String(Base64.getDecoder().decode(b64), StandardCharsets.UTF_8);
          assertFalse(body.contains(f), "response body handed on holds " + f + ": " + body);
        }
      }
    }
  }

  @Test
  void anEchoedSecretIsRedactedInEveryFormItComesBackIn() {
    ExecutionResult r = egress("/api/echo", HEADER);
    assertEquals(0, AbiTest.returned(r), r.log());
    assertEquals("Bearer " + SECRET, lastAuth.get(), "the endpoint did get the secret");
    assertTrue(r.log().contains("[redacted]") || r.log().contains("W3JlZGFjdGVkXQ"), r.log());
    assertNoSecret(r);

    ExecutionResult q = egress("/api/echo", "{\"Query\":{\"param\":\"key\"}}");
    assertEquals(0, AbiTest.returned(q), q.log());
    assertNoSecret(q);
  }

  @Test
  void theSecretGoesOnlyUnderTheBoundPathPrefix() {
    lastAuth.set(null);
    for (String path : List.of("/apix/echo", "/other", "/api/../other", "/api/%2e%2e/x", "/")) {
      ExecutionResult r = egress(path, HEADER);
      assertEquals(AbiStatus.DENIED, AbiTest.returned(r), path);
      assertEquals("Denied", r.journal().get(0).decision(), path);
    }
    assertEquals(null, lastAuth.get(), "no request carried the secret");
  }

  @Test
  void aHugeBodyEndsInTooLargeAfterAtMostTheCapWasRead() {
    hugeBytesSent.set(0);
    ExecutionResult r = egress("/api/huge", HEADER);
    assertEquals(AbiStatus.TOO_LARGE, AbiTest.returned(r), r.log());
    assertTrue(
        hugeBytesSent.get() < (1L << 30),
        "the server could send the whole GiB: " + hugeBytesSent.get());
    ExecutionResult d = egress("/api/declared", HEADER);
    assertEquals(AbiStatus.TOO_LARGE, AbiTest.returned(d), d.log());
  }

  @Test
  void aDrippingBodyEndsAtTheEgressDeadline() {
    HostServices quick =
        HostServices.none().toBuilder().egressTimeout(java.time.Duration.ofMillis(700)).build();
    try (Executor ex = new Executor(1, EnergyModel.estimate(10_000), 120_000, quick)) {
      String req = "{\"url\":\"http://" + endpoint + "/api/drip\"}";
      String net = "{\"outbound\":[\"" + endpoint + "\"],\"inbound\":false}";
      ExecutionResult r =
          AbiTest.run(
              ex,
              EgressGuest.logsAnswer(req),
              AbiTest.grants(AbiTest.NO_STORAGE, AbiTest.NO_KV, net, AbiTest.LOG),
              null);
      assertEquals(AbiStatus.UNAVAILABLE, AbiTest.returned(r));
    }
  }

  @Test
  void anOversizedRequestIsTooLargeBeforeAnythingIsRead() {
    String wat =
        """
        (module
          (import "sandbox" "egress" (func $e (param i32 i32 i32 i32 i32) (result i32)))
          (memory 1)
          (func (export "run") (result i32)
            (call $e (i32.const 0) (i32.const 13000000) (i32.const 1024) (i32.const 1000)
                     (i32.const 0))))
        """;
    ExecutionResult r = AbiTest.run(executor, wat, grants(HEADER), null);
    assertEquals(AbiStatus.TOO_LARGE, AbiTest.returned(r));
  }

  @Test
  void redactionFindsEachFormWhereverItSitsInRandomText() {
    long seed = new Random().nextLong();
    Random rnd = new Random(seed);
    Redaction red = Redaction.of(List.of(SECRET), List.of("Bearer " + SECRET));
    for (int round = 0; round < 200; round++) {
      StringBuilder text = new StringBuilder();
      for (int i = 0; i < rnd.nextInt(200); i++) {
        text.append((char) (' ' + rnd.nextInt(95)));
      }
      String prefix = "x".repeat(rnd.nextInt(3)); // every base64 alignment
      String inner = prefix + SECRET + text;
      String form =
          switch (rnd.nextInt(4)) {
            case 0 -> inner;
            case 1 -> Base64.getEncoder().encodeToString(inner.getBytes(StandardCharsets.UTF_8));
            case 2 -> java.net.URLEncoder.encode(inner, StandardCharsets.UTF_8);
            default -> inner.toUpperCase(java.util.Locale.ROOT);
          };
      String hay = text + form + text;
      String out = red.apply(hay);
      assertFalse(red.leaks(out.getBytes(StandardCharsets.UTF_8)), "seed " + seed);
      String decoded = out;
      assertFalse(decoded.contains(SECRET), "seed " + seed + ": " + out);
      assertTrue(out.contains("[redacted]"), "seed " + seed + ": " + out);
    }
  }
}
