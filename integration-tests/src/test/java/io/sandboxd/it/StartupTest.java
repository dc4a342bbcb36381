package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.MerkleTree;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.NodeIdentity;
import io.sandboxd.daemon.rpc.GetStatusRequest;
import io.sandboxd.daemon.rpc.StatusReply;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.RunStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13 item 5 against the running daemon: once a store has a sealed checkpoint, start-up
 * verifies only the runs after it, so the daemon serves as soon whatever the store holds; the rest
 * is verified in the background. With {@code -Dsandboxd.startup.runs=N} it doubles as the start-up
 * benchmark (figures printed, never asserted on).
 */
class StartupTest {
  @TempDir Path dir;

  static final int RUNS = Integer.getInteger("sandboxd.startup.runs", 2_000);

  /** Fills a store the way the daemon writes one, in batches, signed with the node's key. */
  static void fill(Path state, int n) throws Exception {
    java.nio.file.Files.createDirectories(
        state,
        java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
            java.nio.file.attribute.PosixFilePermissions.fromString("rwx------")));
    NodeIdentity node = NodeIdentity.load(state, state.resolve("keys/node.ed25519"));
    byte[] module = Submissions.exampleUnit("hello");
    String unit = Blake3.hex(module);
    String grants =
        CanonicalJson.canonicalString(CanonicalJson.parse(Submissions.exampleGrants("hello")));
    String grantsId = Blake3.hex(grants.getBytes(StandardCharsets.UTF_8));
    String journalRoot = Hex.encode(MerkleTree.blake3(List.of()).root());
    try (RunStore store = RunStore.open(state.resolve("runs.db"), node.key())) {
      List<RunRecord> batch = new ArrayList<>();
      long t0 = 1_700_000_000_000L;
      for (int i = 0; i < n; i++) {
        String runId = String.format("%012x%08x", t0 + i, i);
        Receipt receipt =
            Receipt.builder()
                .runId(runId)
                .unit(unit)
                .grantsId(grantsId)
                .tier("S2")
                .energy(
                    Map.of(
                        DeviceClass.Cpu,
                        new ClassEnergy(5, Provenance.Estimator, "estimator", 1, 0)))
                .cpuTimeMs(1)
                .wallMs(1)
                .startedMs(t0 + i)
                .endedMs(t0 + i + 1)
                .build();
        Envelope r = Envelope.sign(receipt.toCore(), node.key());
        Envelope a =
            Envelope.sign(
                Attestation.builder()
                    .host(node.host())
                    .tier("S2")
                    .grantsId(grantsId)
                    .receipt(r.address())
                    .unit(unit)
                    .journalRoot(journalRoot)
                    .outcome(new Outcome.Completed())
                    .clockGranted(false)
                    .clockConstantMs(0L)
                    .issuedMs(t0 + i + 2)
                    .build()
                    .toCore(),
                node.key());
        Envelope s =
            Envelope.sign(
                new RunSegment(
                        runId,
                        0,
                        RunSegment.Kind.execute,
                        null,
                        node.host().id(),
                        node.host().publicKey(),
                        "S2",
                        grantsId,
                        r.address(),
                        null,
                        0,
                        Provenance.Estimator,
                        t0 + i + 2)
                    .toCore(),
                node.key());
        batch.add(
            RunRecord.builder()
                .run(runId, t0 + i)
                .unit(unit, grantsId)
                .outcomeJson("\"Completed\"")
                .signed(r, a, s)
                .journal(List.of(), Map.of())
                .log("hello\n")
                .submission(module, grants, "run")
                .build());
        if (batch.size() == 1_000 || i == n - 1) {
          store.appendAll(batch);
          batch.clear();
        }
      }
    }
  }

  /** Starts the daemon on {@code state}; returns it and the ms from spawn to a served call. */
  record Started(DaemonProcess daemon, long ms) {}

  static Started startAndTime(Path state, Path socket) throws Exception {
    long t0 = System.nanoTime();
    DaemonProcess d = DaemonProcess.start(state, socket);
    try (DaemonClient c = new DaemonClient(socket)) {
      while (true) {
        try {
          c.stub()
              .withDeadlineAfter(5, TimeUnit.SECONDS)
              .getStatus(GetStatusRequest.getDefaultInstance());
          break;
        } catch (io.grpc.StatusRuntimeException e) {
          Thread.sleep(5);
        }
      }
    }
    return new Started(d, (System.nanoTime() - t0) / 1_000_000);
  }

  /**
   * The benchmark outside Maven, from integration-tests/: {@code java -Dsandboxd.startup.runs=N -cp
   * target/test-classes:../daemon/target/sandboxd.jar:<junit-jupiter-api, opentest4j>
   * io.sandboxd.it.StartupTest}.
   */
  public static void main(String[] args) throws Exception {
    StartupTest t = new StartupTest();
    t.dir = java.nio.file.Files.createTempDirectory("sandboxd-startup-");
    t.startUpVerifiesOnlyWhatFollowsTheCheckpointAndTheRestInTheBackground();
  }

  @Test
  void startUpVerifiesOnlyWhatFollowsTheCheckpointAndTheRestInTheBackground() throws Exception {
    Started empty = startAndTime(dir.resolve("empty"), dir.resolve("e.sock"));
    empty.daemon().stop();

    Path state = dir.resolve("state");
    long f0 = System.nanoTime();
    fill(state, RUNS);
    long fillMs = (System.nanoTime() - f0) / 1_000_000;
    // No checkpoint yet (a store filled outside the daemon, or upgraded): checked once, in full.
    Started first = startAndTime(state, dir.resolve("s1.sock"));
    assertTrue(
        first
            .daemon()
            .log()
            .contains(
                "the signed head and the "
                    + RUNS
                    + " run(s) after the sealed checkpoint at 0 verify"),
        first.daemon().log());
    first.daemon().stop();

    Started second = startAndTime(state, dir.resolve("s2.sock"));
    try (DaemonProcess d = second.daemon();
        DaemonClient c = new DaemonClient(d.socket)) {
      assertTrue(
          d.log()
              .contains(
                  "the signed head and the 0 run(s) after the sealed checkpoint at "
                      + RUNS
                      + " verify"),
          d.log());
      StatusReply s = c.stub().getStatus(GetStatusRequest.getDefaultInstance());
      assertEquals(RUNS, s.getStoredRuns());
      assertEquals(RUNS, s.getCheckpointRuns());
      // The background pass still checks every run.
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(30);
      while (!s.getVerification().getPhase().equals("VERIFIED") && System.nanoTime() < deadline) {
        assertTrue(
            s.getVerification().getPhase().equals("RUNNING")
                || s.getVerification().getPhase().equals("PENDING"),
            s.getVerification().toString());
        Thread.sleep(100);
        s = c.stub().getStatus(GetStatusRequest.getDefaultInstance());
      }
      assertEquals(RUNS, s.getVerification().getTotalRuns(), s.getVerification().toString());
      long backgroundMs = s.getVerification().getFinishedMs() - s.getVerification().getStartedMs();
      System.out.printf(
          "startup: %d runs (filled in %d ms): empty store %d ms; without checkpoint (full check"
              + " before serving) %d ms; with checkpoint %d ms; background full check %d ms%n",
          RUNS, fillMs, empty.ms(), first.ms(), second.ms(), backgroundMs);
    }
  }
}
