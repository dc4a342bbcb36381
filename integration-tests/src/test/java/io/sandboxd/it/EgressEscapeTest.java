package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.sun.net.httpserver.HttpServer;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.executor.CountingEndpoint;
import io.sandboxd.executor.EgressGuest;
import io.sandboxd.executor.HostileResponses;
import io.sandboxd.executor.ReflectingEndpoint;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 8 items 5 and 7 against the running daemon: a node secret goes only where the node's
 * configuration binds it and never comes back to the guest, the log or the stored journal, even
 * from an endpoint that echoes it; egress bodies are capped while they stream, so a GiB body
 * neither grows the daemon's heap (it runs with -Xmx256m here) nor stops it serving.
 */
class EgressEscapeTest {
  static final String SECRET = "Sup3r/S3cret+Token=42-itest";
  static final String HANDLE = "vault:api";

  @TempDir static Path dir;
  static HttpServer bound;
  static CountingEndpoint other;
  static DaemonProcess daemon;
  static DaemonClient client;
  static String endpoint;
  static String otherEndpoint;
  static final AtomicReference<String> echoedAuth = new AtomicReference<>();
  static final AtomicLong hugeBytesSent = new AtomicLong();

  @BeforeAll
  static void start() throws Exception {
    other = new CountingEndpoint();
    otherEndpoint = other.address;

    bound = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    bound.setExecutor(java.util.concurrent.Executors.newFixedThreadPool(4));
    bound.createContext("/api/echo", ReflectingEndpoint.of(echoedAuth));
    bound.createContext(
        "/api/redirect",
        ex -> {
          ex.getResponseHeaders().add("Location", "http://" + otherEndpoint + "/steal");
          ex.sendResponseHeaders(302, -1);
          ex.close();
        });
    bound.createContext("/api/huge", HostileResponses.hugeChunked(hugeBytesSent));
    bound.createContext("/api/declared", HostileResponses.declaredOnly(2L << 30));
    bound.start();
    endpoint = "127.0.0.1:" + bound.getAddress().getPort();

    Path secretFile = Files.writeString(dir.resolve("api.secret"), SECRET + "\n");
    Path config =
        Files.writeString(
            dir.resolve("sandboxd.json"),
            "{\"secrets\":{\""
                + HANDLE
                + "\":{\"file\":\""
                + secretFile
                + "\",\"endpoints\":[\"http://"
                + endpoint
                + "/api\"]}}}");
    daemon =
        DaemonProcess.start(
            List.of("-Xmx256m"),
            dir.resolve("state"),
            dir.resolve("run/sandboxd.sock"),
            "--config",
            config.toString());
    client = new DaemonClient(daemon.socket);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
    if (bound != null) {
      bound.stop(0);
    }
    if (other != null) {
      other.close();
    }
  }

  /** A unit that makes one egress call, logs the answer and returns the call's status. */
  static byte[] egressUnit(String path) {
    return Wat2Wasm.parse(
        EgressGuest.logsAnswer("{\"method\":\"GET\",\"url\":\"http://" + endpoint + path + "\"}"));
  }

  static String grants(String credentialEndpoint, String handle, String inject) {
    String net =
        "{\"outbound\":[\""
            + endpoint
            + "\",\""
            + otherEndpoint
            + "\"],\"inbound\":false,\"credentials\":[{\"endpoint\":\""
            + credentialEndpoint
            + "\",\"secret_ref\":\""
            + handle
            + "\",\"inject\":"
            + inject
            + "}]}";
    return "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000000,\"cpu_time_ms\":5000,"
        + "\"memory_bytes\":1048576},\"storage\":{\"read\":[],\"write\":[],\"delete\":[]},"
        + "\"network\":"
        + net
        + ",\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
        + "\"host\":{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}}";
  }

  static final String HEADER = "{\"Header\":{\"name\":\"Authorization\",\"prefix\":\"Bearer \"}}";
  static final String QUERY = "{\"Query\":{\"param\":\"key\"}}";

  static SubmitReply submit(byte[] module, String grants) {
    return Submissions.submit(client, module, grants);
  }

  /** The secret as it would show in text: raw, any case, escaped, percent-encoded, base64. */
  static List<String> secretForms() {
    return List.of(
        SECRET,
        SECRET.toLowerCase(Locale.ROOT),
        SECRET.replace("/", "\\/"),
        URLEncoder.encode(SECRET, StandardCharsets.UTF_8),
        Base64.getEncoder().encodeToString(SECRET.getBytes(StandardCharsets.UTF_8)),
        Base64.getEncoder().encodeToString(("Bearer " + SECRET).getBytes(StandardCharsets.UTF_8)));
  }

  static void assertNoSecret(String where, String text) {
    for (String f : secretForms()) {
      assertFalse(text.contains(f), where + " holds the secret as " + f + ":\n" + text);
    }
  }

  /** The run's log with the response body (base64 in the logged answer) decoded next to it. */
  static String logAndDecodedBody(String log) {
    int at = log.indexOf("\"body\":\"");
    if (at < 0) {
      return log;
    }
    String b64 = log.substring(at + 8, log.indexOf('"', at + 8));
    return log + "\n" + new String(Base64.getDecoder().decode(b64), StandardCharsets.UTF_8);
  }

  /** Every byte the daemon keeps on disk (store, WAL, keys, kv) and its own log, as text. */
  static void assertNothingOnDiskHoldsTheSecret() throws IOException {
    List<Path> files = new ArrayList<>();
    try (Stream<Path> s = Files.walk(daemon.state)) {
      s.filter(Files::isRegularFile).forEach(files::add);
    }
    files.add(daemon.log);
    assertTrue(files.stream().anyMatch(p -> p.getFileName().toString().startsWith("runs.db")));
    for (Path f : files) {
      assertNoSecret(f.toString(), new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1));
    }
  }

  @Test
  void anEchoedSecretNeverReachesTheGuestTheLogOrTheStoredJournal() throws Exception {
    for (String inject : List.of(HEADER, QUERY)) {
      echoedAuth.set(null);
      SubmitReply r = submit(egressUnit("/api/echo"), grants(endpoint, HANDLE, inject));
      assertEquals("\"Completed\"", r.getOutcomeJson(), r.getLog());
      if (inject.equals(HEADER)) {
        assertEquals("Bearer " + SECRET, echoedAuth.get(), "the bound endpoint got the secret");
      }
      assertTrue(r.getLog().contains("\"status\":200"), r.getLog());
      assertTrue(logAndDecodedBody(r.getLog()).contains("[redacted]"), r.getLog());
      assertNoSecret("the guest's view and the run log", logAndDecodedBody(r.getLog()));

      DaemonProcess.Result shown = daemon.ctl("runs", "show", r.getRunId());
      assertEquals(0, shown.exit(), shown.err());
      assertNoSecret("runs show", shown.out());
      DaemonProcess.Result exported = daemon.ctl("runs", "show", r.getRunId(), "--export");
      assertEquals(0, exported.exit(), exported.err());
      assertNoSecret("runs show --export", exported.out());

      // The replay feeds the journaled (redacted) answer back and reaches the same root.
      DaemonProcess.Result replay = daemon.ctl("replay", r.getRunId());
      assertEquals(0, replay.exit(), replay.out() + replay.err());
      assertTrue(replay.out().contains("replay matches"), replay.out());
      assertNoSecret("replay", replay.out() + replay.err());
    }
    assertNothingOnDiskHoldsTheSecret();
  }

  @Test
  void aGrantSendingTheSecretWhereTheNodeDidNotBindItIsRefusedAtAdmission() throws Exception {
    other.hits.set(0);
    StatusRuntimeException elsewhere =
        assertThrows(
            StatusRuntimeException.class,
            () -> submit(egressUnit("/api/echo"), grants(otherEndpoint, HANDLE, HEADER)));
    assertEquals(Status.Code.INVALID_ARGUMENT, elsewhere.getStatus().getCode());
    String why = elsewhere.getStatus().getDescription();
    assertTrue(why.contains("$.network.credentials[0].endpoint"), why);
    assertTrue(why.contains(HANDLE) && why.contains(otherEndpoint), why);

    StatusRuntimeException unbound =
        assertThrows(
            StatusRuntimeException.class,
            () -> submit(egressUnit("/api/echo"), grants(endpoint, "vault:unbound", HEADER)));
    assertEquals(Status.Code.INVALID_ARGUMENT, unbound.getStatus().getCode());
    String why2 = unbound.getStatus().getDescription();
    assertTrue(why2.contains("$.network.credentials[0].secret_ref"), why2);
    assertTrue(why2.contains("vault:unbound"), why2);
    assertEquals(0, other.hits.get(), "nothing was sent anywhere");

    // Bound host:port, but outside the bound path prefix: the call is denied, nothing is sent.
    echoedAuth.set(null);
    SubmitReply outside = submit(egressUnit("/apix/echo"), grants(endpoint, HANDLE, HEADER));
    assertTrue(outside.getOutcomeJson().contains("entry returned -1"), outside.getOutcomeJson());
    assertEquals(null, echoedAuth.get());
  }

  @Test
  void aRedirectIsHandedToTheGuestNeverFollowedWithTheSecret() throws Exception {
    other.hits.set(0);
    SubmitReply r = submit(egressUnit("/api/redirect"), grants(endpoint, HANDLE, HEADER));
    assertEquals("\"Completed\"", r.getOutcomeJson(), r.getLog());
    assertTrue(r.getLog().contains("\"status\":302"), r.getLog());
    assertEquals(0, other.hits.get(), "the daemon followed the redirect");
  }

  @Test
  void gibibyteBodiesEndInTooLargeWhileTheDaemonStaysInItsHeapAndKeepsServing() throws Exception {
    hugeBytesSent.set(0);
    // Two at once, each 1 GiB, against a daemon whose whole heap is 256 MiB.
    List<CompletableFuture<SubmitReply>> huge = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      huge.add(
          CompletableFuture.supplyAsync(
              () -> submit(egressUnit("/api/huge"), grants(endpoint, HANDLE, HEADER))));
    }
    for (CompletableFuture<SubmitReply> f : huge) {
      SubmitReply r = f.get(180, TimeUnit.SECONDS);
      assertTrue(r.getOutcomeJson().contains("entry returned -9"), r.getOutcomeJson());
    }
    assertTrue(hugeBytesSent.get() < (2L << 30), "both GiB went through: " + hugeBytesSent.get());
    SubmitReply declared = submit(egressUnit("/api/declared"), grants(endpoint, HANDLE, HEADER));
    assertTrue(declared.getOutcomeJson().contains("entry returned -9"), declared.getOutcomeJson());

    assertTrue(daemon.process.isAlive(), daemon.log());
    SubmitReply next = submit(egressUnit("/api/echo"), grants(endpoint, HANDLE, HEADER));
    assertEquals("\"Completed\"", next.getOutcomeJson(), next.getLog());
    assertFalse(daemon.log().contains("OutOfMemoryError"), daemon.log());
  }
}
