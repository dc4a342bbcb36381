package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.reflection.v1.ServerReflectionGrpc;
import io.grpc.reflection.v1.ServerReflectionRequest;
import io.grpc.reflection.v1.ServerReflectionResponse;
import io.grpc.reflection.v1.ServiceResponse;
import io.grpc.stub.StreamObserver;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.FirstReply;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13 item 2 against the running daemon: the Prometheus endpoint on a configured loopback
 * address (refused elsewhere: {@link ConfigurationTest}), the gRPC health and reflection services
 * on the socket, {@code sandboxctl status} and {@code sandboxctl store verify}.
 */
class ObservabilityTest {
  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;
  static String metricsUrl;
  static SubmitReply hello;
  static SubmitReply spin;

  @BeforeAll
  static void start() throws Exception {
    Path config = dir.resolve("sandboxd.json");
    Files.writeString(config, "{\"metrics\": {\"listen\": \"127.0.0.1:0\"}}");
    daemon =
        DaemonProcess.start(
            dir.resolve("state"), dir.resolve("sandboxd.sock"), "--config", config.toString());
    client = new DaemonClient(daemon.socket);
    Matcher m =
        Pattern.compile("metrics on (http://127\\.0\\.0\\.1:\\d+/metrics)").matcher(daemon.log());
    assertTrue(m.find(), daemon.log());
    metricsUrl = m.group(1);
    hello =
        Submissions.submit(
            client, Submissions.exampleUnit("hello"), Submissions.exampleGrants("hello"));
    spin =
        Submissions.submit(
            client, Submissions.exampleUnit("spin"), Submissions.exampleGrants("spin"));
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  static HttpResponse<String> get(String url) throws Exception {
    return HttpClient.newHttpClient()
        .send(
            HttpRequest.newBuilder(URI.create(url)).GET().build(),
            HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void prometheusEndpointCountsRunsBreachesEnergyAndStoreAppends() throws Exception {
    HttpResponse<String> r = get(metricsUrl);
    assertEquals(200, r.statusCode());
    assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"));
    String text = r.body();
    assertTrue(text.contains("sandboxd_runs_total{outcome=\"Completed\"} 1.0"), text);
    assertTrue(text.contains("sandboxd_runs_total{outcome=\"Terminated\"} 1.0"), text);
    assertTrue(text.contains("sandboxd_breaches_total{kind=\"CpuTime\"} 1.0"), text);
    assertTrue(
        text.contains("sandboxd_energy_joules_total{class=\"Cpu\",provenance=\"Estimator\"}"),
        text);
    assertTrue(text.contains("sandboxd_store_append_seconds_count 2"), text);
    // Each phase of the two runs, and none of the start-up primer's runs (kept nowhere).
    for (String phase : List.of("admit", "launch", "seal", "store")) {
      assertTrue(
          text.contains("sandboxd_run_phase_seconds_count{phase=\"" + phase + "\"} 2"), text);
    }
    // spin runs until its 300 ms of CPU are spent: its launch is most of the time both runs took.
    Matcher launch =
        Pattern.compile("sandboxd_run_phase_seconds_sum\\{phase=\"launch\"\\} ([0-9.E-]+)")
            .matcher(text);
    assertTrue(launch.find(), text);
    assertTrue(Double.parseDouble(launch.group(1)) >= 0.25, text);
    assertTrue(text.contains("sandboxd_submissions_in_flight 0.0"), text);
    assertTrue(text.contains("sandboxd_store_size_bytes "), text);
    assertTrue(text.contains("sandboxd_draining 0.0"), text);
    // Never a run id (or any other unbounded value) as a label.
    assertFalse(text.contains(hello.getRunId()), text);
    assertFalse(text.contains(spin.getRunId()), text);
    assertEquals(404, get(metricsUrl.replace("/metrics", "/other")).statusCode());
  }

  @Test
  void healthSaysServingForTheServerAndTheApi() {
    HealthGrpc.HealthBlockingStub h =
        HealthGrpc.newBlockingStub(client.channel()).withDeadlineAfter(30, TimeUnit.SECONDS);
    assertEquals(
        HealthCheckResponse.ServingStatus.SERVING,
        h.check(HealthCheckRequest.getDefaultInstance()).getStatus());
    assertEquals(
        HealthCheckResponse.ServingStatus.SERVING,
        h.check(HealthCheckRequest.newBuilder().setService("sandboxd.v1.Sandboxd").build())
            .getStatus());
    io.grpc.StatusRuntimeException unknown =
        org.junit.jupiter.api.Assertions.assertThrows(
            io.grpc.StatusRuntimeException.class,
            () -> h.check(HealthCheckRequest.newBuilder().setService("nope").build()));
    assertEquals(io.grpc.Status.Code.NOT_FOUND, unknown.getStatus().getCode());
  }

  @Test
  void reflectionListsTheServices() throws Exception {
    FirstReply<ServerReflectionResponse> answer = new FirstReply<>();
    StreamObserver<ServerReflectionRequest> req =
        ServerReflectionGrpc.newStub(client.channel()).serverReflectionInfo(answer);
    req.onNext(ServerReflectionRequest.newBuilder().setListServices("*").build());
    ServerReflectionResponse r = answer.future().get(30, TimeUnit.SECONDS);
    req.onCompleted();
    List<String> names =
        r.getListServicesResponse().getServiceList().stream()
            .map(ServiceResponse::getName)
            .toList();
    assertTrue(names.contains("sandboxd.v1.Sandboxd"), names.toString());
    assertTrue(names.contains("grpc.health.v1.Health"), names.toString());
  }

  static JsonNode statusJson() throws Exception {
    DaemonProcess.Result r = daemon.ctl("status", "--json");
    assertEquals(0, r.exit(), r.err());
    return CanonicalJson.parse(r.out().trim());
  }

  @Test
  void statusReportsIdentityStoreRunsPolicyAndVerification() throws Exception {
    JsonNode s = statusJson();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!s.get("verification").get("phase").asText().equals("VERIFIED")
        && System.nanoTime() < deadline) {
      Thread.sleep(200);
      s = statusJson();
    }
    assertTrue(s.get("version").asText().startsWith("sandboxd "), s.toString());
    String key = Envelope.fromJson(CanonicalJson.parse(hello.getAttestation())).publicKey();
    assertEquals(key, s.get("public_key").asText());
    assertFalse(s.get("host_id").asText().isEmpty());
    assertTrue(s.get("uptime_ms").asLong() > 0);
    assertTrue(s.get("meters").get(0).asText().contains("provenance Estimator"), s.toString());
    assertEquals(1, s.get("runs").get("by_outcome").get("Completed").asLong(), s.toString());
    assertEquals(1, s.get("runs").get("by_outcome").get("Terminated").asLong(), s.toString());
    assertEquals(0, s.get("runs").get("in_flight").asLong());
    assertTrue(s.get("store").get("bytes").asLong() > 0);
    // The mode's default rules in force, with what each permits (issue 23), not "none configured".
    assertTrue(s.get("policy").asText().startsWith("root: uids [0]"), s.toString());
    assertTrue(s.get("policy").asText().contains("permissions [any_run, "), s.toString());
    assertFalse(s.get("draining").asBoolean());
    assertEquals("VERIFIED", s.get("verification").get("phase").asText(), s.toString());
    assertTrue(s.get("metrics_listen").asText().startsWith("127.0.0.1:"), s.toString());

    DaemonProcess.Result text = daemon.ctl("status");
    assertEquals(0, text.exit(), text.err());
    assertTrue(text.out().contains("public key   " + key), text.out());
    assertTrue(text.out().contains("policy       root: uids [0]"), text.out());
    assertTrue(text.out().contains("verification verified: all "), text.out());
    // Who may mint besides each standing grant's issuer: nobody, on this node.
    assertEquals(0, s.get("event_sources").size(), s.toString());
    assertTrue(
        text.out().contains("mint events  signed by a standing grant's issuer only"), text.out());
  }

  @Test
  void storeVerifyChecksEverythingNowAndNamesDamageDoneWhileServing() throws Exception {
    Path state = dir.resolve("verify-state");
    try (DaemonProcess d = DaemonProcess.start(state, dir.resolve("verify.sock"));
        DaemonClient c = new DaemonClient(d.socket)) {
      SubmitReply a =
          Submissions.submit(
              c, Submissions.exampleUnit("hello"), Submissions.exampleGrants("hello"));
      Submissions.submit(c, Submissions.exampleUnit("hello"), Submissions.exampleGrants("hello"));
      DaemonProcess.Result ok = d.ctl("store", "verify");
      assertEquals(0, ok.exit(), ok.out() + ok.err());
      assertTrue(ok.out().startsWith("verified: all 2 runs"), ok.out());
      assertTrue(ok.out().contains("checkpoint sealed at 2 runs"), ok.out());
      // An old run rewritten behind the running daemon's back.
      try (Connection db = StoppedState.store(state);
          Statement st = db.createStatement()) {
        st.execute("PRAGMA busy_timeout=10000");
        assertEquals(
            1,
            st.executeUpdate(
                "UPDATE runs SET log = 'forged' WHERE run_id = '" + a.getRunId() + "'"));
      }
      DaemonProcess.Result bad = d.ctl("store", "verify");
      assertEquals(1, bad.exit(), bad.out() + bad.err());
      assertTrue(bad.out().startsWith("DAMAGED: 1 finding(s) in 2 runs"), bad.out());
      assertTrue(bad.err().contains("run " + a.getRunId() + ", log:"), bad.err());
      DaemonProcess.Result status = d.ctl("status");
      assertTrue(status.out().contains("verification DAMAGED"), status.out());
      assertTrue(status.out().contains("run " + a.getRunId() + ", log:"), status.out());
      assertTrue(d.log().contains("found damage the node did not sign"), d.log());
      assertNotNull(d.log());
    }
  }
}
