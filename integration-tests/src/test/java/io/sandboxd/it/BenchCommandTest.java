package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ListRunsRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10 item 7 against the running daemon: `sandboxctl bench` by bytes and by address reports
 * runs the daemon really recorded, with consistent figures (no speed is asserted).
 */
class BenchCommandTest {
  @TempDir static Path dir;
  static DaemonProcess daemon;
  static Path module;
  static Path grants;

  @BeforeAll
  static void start() throws Exception {
    daemon = DaemonProcess.start(dir.resolve("state"), dir.resolve("run/sandboxd.sock"));
    module = dir.resolve("hello.wasm");
    Files.write(module, Submissions.exampleUnit("hello"));
    grants = dir.resolve("hello.grants.json");
    Files.writeString(grants, Submissions.exampleGrants("hello"));
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(daemon);
  }

  static int recordedRuns() {
    try (DaemonClient c = new DaemonClient(daemon.socket)) {
      return c.stub()
          .listRuns(ListRunsRequest.newBuilder().setLimit(10_000).build())
          .getRunsCount();
    }
  }

  static JsonNode bench(String unit, String concurrency) throws Exception {
    int before = recordedRuns();
    DaemonProcess.Result r =
        daemon.ctl(
            "bench",
            unit,
            "--grants",
            grants.toString(),
            "--concurrency",
            concurrency,
            "--duration",
            "2",
            "--warmup",
            "1",
            "--json");
    assertEquals(0, r.exit(), r.out() + r.err());
    JsonNode j = CanonicalJson.mapper().readTree(r.out());
    long runs = j.get("runs").asLong();
    assertTrue(runs > 0, r.out());
    assertEquals(0, j.get("errors").asLong(), r.out());
    assertEquals(0, j.get("not_completed").asLong(), r.out());
    // Every measured run (and each warm-up run) is one the daemon recorded.
    assertTrue(recordedRuns() - before >= runs, r.out());
    double seconds = j.get("duration_s").asDouble();
    assertTrue(seconds >= 2.0, r.out());
    assertEquals(runs / seconds, j.get("units_per_s").asDouble(), 0.01 * runs / seconds + 0.01);
    double p50 = j.get("p50_ms").asDouble();
    double p99 = j.get("p99_ms").asDouble();
    double p999 = j.get("p999_ms").asDouble();
    double max = j.get("max_ms").asDouble();
    assertTrue(0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= max, r.out());
    // A client waits for each reply and counts only the calls it began in the window, so their
    // latencies add up to at most the window plus the last one's; at least half took p50 or more.
    int clients = Integer.parseInt(concurrency);
    assertTrue(runs <= clients * ((seconds * 1000 + max) / p50) * 2 + clients, r.out());
    return j;
  }

  @Test
  void benchByBytesAndByAddressReportsConsistentFigures() throws Exception {
    // Compiled once before measuring: on a loaded machine the first compile can outlast a window.
    try (DaemonClient c = new DaemonClient(daemon.socket)) {
      Submissions.submit(c, Submissions.exampleUnit("hello"), Submissions.exampleGrants("hello"));
    }
    JsonNode bytes = bench(module.toString(), "1");
    assertEquals("bytes", bytes.get("by").asText());
    DaemonProcess.Result put = daemon.ctl("modules", "put", module.toString());
    assertEquals(0, put.exit(), put.err());
    JsonNode byAddress = bench("b3:" + put.out().strip(), "4");
    assertEquals("address", byAddress.get("by").asText());
    assertEquals(4, byAddress.get("concurrency").asInt());
  }

  @Test
  void benchOfAnUnknownAddressFailsNamingIt() throws Exception {
    String unknown = "cd".repeat(32);
    DaemonProcess.Result r =
        daemon.ctl(
            "bench",
            "b3:" + unknown,
            "--grants",
            grants.toString(),
            "--duration",
            "1",
            "--warmup",
            "0");
    assertEquals(2, r.exit(), r.out() + r.err());
    assertTrue(r.err().contains("NOT_FOUND") && r.err().contains(unknown), r.err());
  }
}
