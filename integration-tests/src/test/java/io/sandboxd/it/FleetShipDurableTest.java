package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.FleetProof;
import io.sandboxd.attest.KeyFile;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.DaemonClient;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23 item 6 (fleet shipping): a detached run's signed segments and records are shipped like a
 * single-step run's. One JetStream server (Debian nats-server), `sandboxd aggregate` and a node:
 * every durable segment and record the node signed ends in the fleet log, with a verified inclusion
 * proof kept on the node.
 */
class FleetShipDurableTest {
  static final String ORIGIN = "test.fleet.durable";

  @TempDir Path dir;

  /** address -> proof JSON (null when none yet) of the run's durable segments and records. */
  static Map<String, String> durable(Path state, String run) throws Exception {
    Map<String, String> out = new HashMap<>();
    for (List<String> row :
        StoppedState.rows(
            state,
            "SELECT d.address, p.proof FROM (SELECT address FROM durable_segments"
                + " WHERE run_id = ?1 UNION ALL SELECT address FROM durable_records"
                + " WHERE run_id = ?1) d LEFT JOIN fleet_proofs p ON p.address = d.address",
            run)) {
      out.put(row.get(0), row.get(1));
    }
    return out;
  }

  void waitFor(Poll.Condition c, int seconds) throws Exception {
    Poll.until(seconds, dir.resolve("agg.log"), c);
  }

  @Test
  void aDetachedRunsRecordsEndInTheFleetLogWithAProofOnTheNode() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Path conf =
        Files.writeString(
            dir.resolve("nats.conf"),
            "listen: 127.0.0.1:"
                + port
                + "\njetstream { store_dir: \""
                + dir.resolve("js")
                + "\" }\n");
    List<Process> procs = new ArrayList<>();
    procs.add(
        new ProcessBuilder(FleetJetStreamTest.natsServer(), "-c", conf.toString())
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("nats.log").toFile())
            .start());
    String url = "nats://127.0.0.1:" + port;
    SigningKey node = SeededKeys.filled(0x51);
    SigningKey agg = SeededKeys.filled(0x52);
    Path aggState = dir.resolve("aggregate");
    Files.createDirectories(aggState.resolve("keys"));
    KeyFile.write(aggState.resolve("keys/aggregator.ed25519"), agg);
    Path nodes = Files.writeString(dir.resolve("nodes.txt"), node.publicKey().hex() + "\n");
    Files.writeString(dir.resolve("agg.log"), "");
    try {
      procs.add(
          new ProcessBuilder(FleetJetStreamTest.aggregateCommand(url, nodes, aggState, ORIGIN, 1))
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("agg.log").toFile()))
              .start());
      waitFor(() -> Files.readString(dir.resolve("agg.log")).contains("serving; key"), 60);

      Path state = dir.resolve("node");
      Path keys = state.resolve("keys");
      Files.createDirectories(
          keys, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      Files.setPosixFilePermissions(state, PosixFilePermissions.fromString("rwx------"));
      KeyFile.write(keys.resolve("node.ed25519"), node);
      Path cfg =
          Files.writeString(
              dir.resolve("node.json"),
              "{\"fleet\":{\"nats\":\""
                  + url
                  + "\",\"replicas\":1,\"aggregator_key\":\""
                  + agg.publicKey().hex()
                  + "\",\"origin\":\""
                  + ORIGIN
                  + "\"}}");
      try (DaemonProcess d =
              DaemonProcess.start(state, dir.resolve("node.sock"), "--config", cfg.toString());
          DaemonClient c = new DaemonClient(d.socket)) {
        String run =
            Submissions.detached(
                c, Wat2Wasm.parse(FleetDurableTest.QUICK), DurableRunTest.GRANTS, "step");
        assertEquals("completed", Submissions.waitState(c, run, 120_000));
        Map<String, String> before = durable(state, run);
        assertEquals(3, before.size(), "execute segment, receipt, attestation: " + before);
        waitFor(() -> durable(state, run).values().stream().allMatch(p -> p != null), 120);
        List<String> log = FleetJetStreamTest.fleetLog(aggState);
        for (var e : durable(state, run).entrySet()) {
          assertTrue(log.contains(e.getKey()), "not in the fleet log: " + e.getKey());
          FleetProof p = FleetProof.fromJson(CanonicalJson.parse(e.getValue()));
          assertEquals(e.getKey(), p.address());
          p.verify(agg.publicKey(), ORIGIN);
        }
      }
    } finally {
      for (Process p : procs) {
        p.destroyForcibly().waitFor();
      }
    }
  }
}
