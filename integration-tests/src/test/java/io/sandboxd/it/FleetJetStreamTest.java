package io.sandboxd.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.PublishOptions;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.FleetProof;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.KeyFile;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.fleet.FleetStreams;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 14 item 3 on loopback: a three-server JetStream cluster (Debian nats-server, started here),
 * two daemons shipping their signed records and `sandboxd aggregate`. One NATS server and the
 * aggregator are killed mid-stream; the fleet log must end with every record the daemons stored
 * exactly once, and each daemon must hold a valid inclusion proof for each of its records.
 */
class FleetJetStreamTest {
  static final String ORIGIN = "test.fleet";
  static final int RUNS_PER_NODE = 12;

  @TempDir static Path dir;
  static final List<Process> nats = new ArrayList<>(List.of());
  static final List<AutoCloseable> closing = new ArrayList<>();
  static Process aggregator;

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  static String natsServer() {
    for (String d : List.of("/usr/sbin", "/usr/bin", "/usr/local/bin")) {
      if (Files.isExecutable(Path.of(d, "nats-server"))) {
        return d + "/nats-server";
      }
    }
    fail("nats-server is not installed (bin/test installs the Debian package nats-server)");
    return null;
  }

  static Process startNats(int i, int[] client, int[] cluster) throws Exception {
    StringBuilder routes = new StringBuilder();
    for (int j = 0; j < 3; j++) {
      if (j != i) {
        routes
            .append(routes.length() == 0 ? "" : ", ")
            .append("nats-route://127.0.0.1:" + cluster[j]);
      }
    }
    Path conf = dir.resolve("nats" + i + ".conf");
    Files.writeString(
        conf,
        "server_name: n"
            + i
            + "\nlisten: 127.0.0.1:"
            + client[i]
            + "\njetstream { store_dir: \""
            + dir.resolve("js" + i)
            + "\" }\ncluster { name: sbx, listen: 127.0.0.1:"
            + cluster[i]
            + ", routes: ["
            + routes
            + "] }\n");
    return new ProcessBuilder(natsServer(), "-c", conf.toString())
        .redirectErrorStream(true)
        .redirectOutput(dir.resolve("nats" + i + ".log").toFile())
        .start();
  }

  static Process startAggregator(String urls, Path nodes, Path state) throws Exception {
    Process p =
        new ProcessBuilder(aggregateCommand(urls, nodes, state, ORIGIN, 3))
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("aggregate.log").toFile()))
            .start();
    waitFor(() -> Files.readString(dir.resolve("aggregate.log")).contains("serving; key"), 60);
    return p;
  }

  /** {@code sandboxd aggregate} as a command line, for streams of {@code replicas} replicas. */
  static List<String> aggregateCommand(
      String urls, Path nodes, Path state, String origin, int replicas) {
    return DaemonProcess.java(
        "io.sandboxd.daemon.SandboxdMain",
        "aggregate",
        "--nats",
        urls,
        "--nodes",
        nodes.toString(),
        "--state",
        state.toString(),
        "--origin",
        origin,
        "--replicas",
        String.valueOf(replicas));
  }

  static void waitFor(Poll.Condition c, int seconds) throws Exception {
    Poll.until(seconds, dir.resolve("aggregate.log"), c);
  }

  static DaemonProcess startNode(String name, SigningKey key, String urls, SigningKey agg)
      throws Exception {
    Path state = dir.resolve(name);
    Path keys = state.resolve("keys");
    Files.createDirectories(
        keys, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    Files.setPosixFilePermissions(state, PosixFilePermissions.fromString("rwx------"));
    KeyFile.write(keys.resolve("node.ed25519"), key);
    Path cfg = dir.resolve(name + ".json");
    Files.writeString(
        cfg,
        "{\"fleet\":{\"nats\":\""
            + urls
            + "\",\"aggregator_key\":\""
            + agg.publicKey().hex()
            + "\",\"origin\":\""
            + ORIGIN
            + "\"}}");
    return DaemonProcess.start(state, dir.resolve(name + ".sock"), "--config", cfg.toString());
  }

  /** address -> proof JSON (null when none yet) of every record a node's store holds. */
  static Map<String, String> records(DaemonProcess d) throws Exception {
    Map<String, String> out = new HashMap<>();
    for (List<String> row :
        StoppedState.rows(
            d.state,
            "SELECT r.address, p.proof FROM run_records r LEFT JOIN fleet_proofs p"
                + " ON p.address = r.address")) {
      out.put(row.get(0), row.get(1));
    }
    return out;
  }

  static List<String> fleetLog(Path state) throws IOException {
    byte[] all = Files.readAllBytes(state.resolve("fleet.log"));
    List<String> out = new ArrayList<>();
    for (int i = 0; i + 64 <= all.length; i += 64) {
      out.add(Hex.encode(Arrays.copyOfRange(all, i, i + 32)));
    }
    return out;
  }

  @AfterAll
  static void stopAll() throws Exception {
    for (AutoCloseable c : closing) {
      c.close();
    }
    if (aggregator != null) {
      aggregator.destroyForcibly().waitFor();
    }
    for (Process p : nats) {
      p.destroyForcibly().waitFor();
    }
  }

  @Test
  void everyRecordOnceInTheFleetLogAndAProofOnEveryNodeDespiteKills() throws Exception {
    int[] client = {freePort(), freePort(), freePort()};
    int[] cluster = {freePort(), freePort(), freePort()};
    for (int i = 0; i < 3; i++) {
      nats.add(startNats(i, client, cluster));
    }
    String urls =
        "nats://127.0.0.1:"
            + client[0]
            + ",nats://127.0.0.1:"
            + client[1]
            + ",nats://127.0.0.1:"
            + client[2];
    SigningKey keyA = SeededKeys.filled(0x11);
    SigningKey keyB = SeededKeys.filled(0x22);
    SigningKey agg = SeededKeys.filled(0x33);
    Path aggState = dir.resolve("aggregate");
    Files.createDirectories(aggState.resolve("keys"));
    KeyFile.write(aggState.resolve("keys/aggregator.ed25519"), agg);
    Path nodes = dir.resolve("nodes.txt");
    Files.writeString(
        nodes, "# the two nodes\n" + keyA.publicKey().hex() + "\n" + keyB.publicKey().hex() + "\n");

    aggregator = startAggregator(urls, nodes, aggState);
    DaemonProcess a = startNode("a", keyA, urls, agg);
    closing.add(a);
    DaemonProcess b = startNode("b", keyB, urls, agg);
    closing.add(b);
    DaemonClient ca = new DaemonClient(a.socket);
    DaemonClient cb = new DaemonClient(b.socket);
    closing.add(0, ca);
    closing.add(0, cb);
    byte[] hello = Submissions.exampleUnit("hello");
    String grants = Submissions.exampleGrants("hello");

    // Records from outside the allowlist, and a forged one on an allowed node's subject.
    SigningKey stranger = SeededKeys.filled(0x44);
    Envelope strange = Envelope.sign(CanonicalJson.parse("{\"schema\":\"x/1\",\"n\":1}"), stranger);
    // Signed by the stranger over another core, then labelled with node a's key: its own message id
    // (the broker deduplicates by id), refused because the signature is not node a's.
    Envelope other = Envelope.sign(CanonicalJson.parse("{\"schema\":\"x/1\",\"n\":2}"), stranger);
    Envelope forged =
        new Envelope(other.core(), other.address(), other.signature(), keyA.publicKey().hex());
    try (Connection nc = FleetStreams.connect(urls, "test", () -> false, e -> {})) {
      JetStream js = nc.jetStream();
      js.publish(
          FleetStreams.RECORDS + stranger.publicKey().hex(),
          strange.toJsonLine().getBytes(UTF_8),
          PublishOptions.builder().messageId(strange.address()).build());
      js.publish(
          FleetStreams.RECORDS + keyA.publicKey().hex(),
          forged.toJsonLine().getBytes(UTF_8),
          PublishOptions.builder().messageId(forged.address()).build());
    }

    for (int i = 0; i < RUNS_PER_NODE; i++) {
      Submissions.submit(ca, hello, grants);
      Submissions.submit(cb, hello, grants);
      if (i == RUNS_PER_NODE / 2) {
        // Mid-stream: one NATS server and the aggregator die without warning.
        nats.get(2).destroyForcibly().waitFor();
        aggregator.destroyForcibly().waitFor();
      }
      if (i == RUNS_PER_NODE / 2 + 2) {
        aggregator = startAggregator(urls, nodes, aggState);
      }
    }

    waitFor(
        () ->
            records(a).values().stream().allMatch(p -> p != null)
                && records(b).values().stream().allMatch(p -> p != null),
        180);

    List<String> log = fleetLog(aggState);
    assertEquals(new HashSet<>(log).size(), log.size(), "a leaf appended twice: " + log);
    Map<String, String> ra = records(a);
    Map<String, String> rb = records(b);
    assertEquals(3 * RUNS_PER_NODE, ra.size(), "segment, receipt and attestation per run");
    assertEquals(3 * RUNS_PER_NODE, rb.size());
    Set<String> expected = new HashSet<>(ra.keySet());
    expected.addAll(rb.keySet());
    assertEquals(expected, new HashSet<>(log), "the fleet log holds exactly the nodes' records");
    for (Map<String, String> node : List.of(ra, rb)) {
      for (var e : node.entrySet()) {
        FleetProof p = FleetProof.fromJson(CanonicalJson.parse(e.getValue()));
        assertEquals(e.getKey(), p.address());
        p.verify(agg.publicKey(), ORIGIN);
      }
    }
    String refused = Files.readString(aggState.resolve("refused.jsonl"));
    assertTrue(refused.contains("not in the allowlist"), refused);
    assertTrue(refused.contains("does not verify under public_key"), refused);
    assertTrue(!log.contains(strange.address()), "a refused record was appended");
    assertTrue(!log.contains(forged.address()), "a forged record was appended");

    // Throughput: M records signed by node a's key, queued while the aggregator is stopped, then
    // drained by a fresh aggregator; baseline: a plain pull consumer that fetches and acks the
    // same messages without verifying, appending or proving (same cluster, same run).
    int m = Integer.getInteger("fleet.bench.records", 3000);
    aggregator.destroy();
    aggregator.waitFor();
    try (Connection nc = FleetStreams.connect(urls, "bench", () -> false, e -> {})) {
      JetStream js = nc.jetStream();
      List<java.util.concurrent.CompletableFuture<?>> acks = new ArrayList<>();
      for (int i = 0; i < m; i++) {
        Envelope e =
            Envelope.sign(CanonicalJson.parse("{\"schema\":\"bench/1\",\"n\":" + i + "}"), keyA);
        acks.add(
            js.publishAsync(
                FleetStreams.RECORDS + keyA.publicKey().hex(),
                e.toJsonLine().getBytes(UTF_8),
                PublishOptions.builder().messageId(e.address()).build()));
      }
      for (var f : acks) {
        f.get(60, TimeUnit.SECONDS);
      }
      var sub = baselineConsumer(js);
      int seen = 0;
      // The clock starts at the first message: a consumer still finding its leader is not the
      // baseline's cost.
      long t0 = 0;
      long firstBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (seen < log.size() + m + 2) {
        List<io.nats.client.Message> got = sub.fetch(512, java.time.Duration.ofSeconds(2));
        if (got.isEmpty()) {
          if (seen > 0 || System.nanoTime() > firstBy) {
            break;
          }
          continue;
        }
        if (seen == 0) {
          t0 = System.nanoTime();
        }
        for (io.nats.client.Message x : got) {
          x.ack();
        }
        seen += got.size();
      }
      double baseline = seen / ((System.nanoTime() - t0) / 1e9);
      int before = fleetLog(aggState).size();
      long t1 = System.nanoTime();
      aggregator = startAggregator(urls, nodes, aggState);
      waitFor(() -> fleetLog(aggState).size() >= before + m, 300);
      double rate = m / ((System.nanoTime() - t1) / 1e9);
      String line =
          String.format(
              "fleet aggregator: %d records in the 3-server cluster (one server down): %.0f records/s"
                  + " (verify + append + fsync + checkpoint + proof per record, incl. start-up);"
                  + " baseline fetch+ack only: %.0f msgs/s over %d msgs; ratio %.2f",
              m, rate, baseline, seen, rate / baseline);
      System.out.println(line);
      Files.writeString(
          DaemonProcess.ROOT.resolve("integration-tests/target/fleet-throughput.txt"), line + "\n");
      assertEquals(before + m, fleetLog(aggState).size());
    }
  }

  /**
   * The baseline's pull consumer. With one server of three killed the cluster may still be electing
   * a meta leader, and consumer creation then times out: it is retried for up to a minute.
   */
  static io.nats.client.JetStreamSubscription baselineConsumer(JetStream js) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (true) {
      try {
        return js.subscribe(
            FleetStreams.RECORDS + ">",
            io.nats.client.PullSubscribeOptions.builder().durable("baseline").build());
      } catch (java.io.IOException | io.nats.client.JetStreamApiException e) {
        if (System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(500);
      }
    }
  }
}
