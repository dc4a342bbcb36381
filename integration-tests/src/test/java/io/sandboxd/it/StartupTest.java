package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Ed25519Engine;
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
    try (RunStore store = openStore(state)) {
      append(store, node(state), 0, n);
    }
  }

  private static NodeIdentity node(Path state) throws Exception {
    return NodeIdentity.load(
        state, state.resolve("keys/node.ed25519"), Ed25519Engine::bouncyCastle);
  }

  private static RunStore openStore(Path state) throws Exception {
    java.nio.file.Files.createDirectories(
        state,
        java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
            java.nio.file.attribute.PosixFilePermissions.fromString("rwx------")));
    return RunStore.open(state.resolve("runs.db"), node(state).key());
  }

  /**
   * Brings {@code state} to at least {@code total} runs as a serving daemon leaves its store: all
   * but the last {@code unsealed} under a sealed checkpoint (the daemon's verifier seals every 1024
   * new runs). A store that already holds them gets {@code unsealed} more runs, so that every start
   * of the benchmark finds that many runs after the checkpoint. Returns the runs it holds.
   */
  static long fillSealed(Path state, long total, int unsealed) throws Exception {
    try (RunStore store = openStore(state)) {
      NodeIdentity node = node(state);
      long have = store.headRuns();
      // In chunks, each sealed when written: an interrupted fill resumes where it stopped.
      while (have < total - unsealed) {
        long chunk = Math.min(100_000, total - unsealed - have);
        long t0 = System.nanoTime();
        append(store, node, have, chunk);
        long t1 = System.nanoTime();
        RunStore.StartupCheck c = store.verifyFromCheckpoint();
        if (!c.damage().isEmpty()) {
          throw new IllegalStateException("the filled store does not verify: " + c.damage());
        }
        have = store.headRuns();
        System.out.printf(
            "filled %d runs in %d ms, verified and sealed %d in %d ms: %d runs%n",
            chunk,
            (t1 - t0) / 1_000_000,
            c.verifiedRuns(),
            (System.nanoTime() - t1) / 1_000_000,
            have);
      }
      append(store, node, have, unsealed);
      return store.headRuns();
    }
  }

  /**
   * Appends {@code n} runs from index {@code from} in batches of 1000 (one transaction each, as
   * group commit writes them); each batch's records are signed in parallel before it is stored.
   */
  private static void append(RunStore store, NodeIdentity node, long from, long n)
      throws Exception {
    byte[] module = Submissions.exampleUnit("hello");
    String grants =
        CanonicalJson.canonicalString(CanonicalJson.parse(Submissions.exampleGrants("hello")));
    for (long at = from; at < from + n; at += 1_000) {
      List<RunRecord> batch =
          java.util.stream.LongStream.range(at, Math.min(at + 1_000, from + n))
              .parallel()
              .mapToObj(i -> run(node, module, grants, i))
              .toList();
      store.appendAll(batch);
    }
  }

  /** Run {@code i} of a filled store: a completed hello run, its records signed by the node. */
  private static RunRecord run(NodeIdentity node, byte[] module, String grants, long i) {
    String unit = Blake3.hex(module);
    String grantsId = Blake3.hex(grants.getBytes(StandardCharsets.UTF_8));
    String journalRoot = Hex.encode(MerkleTree.blake3(List.of()).root());
    long t0 = 1_700_000_000_000L;
    String runId = String.format("%012x%08x", t0 + i, i);
    Receipt receipt =
        Receipt.builder()
            .runId(runId)
            .unit(unit)
            .grantsId(grantsId)
            .tier("S2")
            .energy(
                Map.of(
                    DeviceClass.Cpu, new ClassEnergy(5, Provenance.Estimator, "estimator", 1, 0)))
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
    return RunRecord.builder()
        .run(runId, t0 + i)
        .unit(unit, grantsId)
        .outcomeJson("\"Completed\"")
        .signed(r, a, s)
        .journal(List.of(), Map.of())
        .log("hello\n")
        .submission(module, grants, "run")
        .build();
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
   * io.sandboxd.it.StartupTest}; with {@code fill STATE TOTAL UNSEALED} it only fills (see {@link
   * #fillSealed}), for benchmarks/run-startup.sh.
   */
  public static void main(String[] args) throws Exception {
    if (args.length == 4 && args[0].equals("fill")) {
      long runs = fillSealed(Path.of(args[1]), Long.parseLong(args[2]), Integer.parseInt(args[3]));
      System.out.println("runs " + runs);
      return;
    }
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

  /**
   * As it serves, the daemon runs one embedded unit through its run pipeline (RunPathPrimer) so a
   * client's first run does not load it: the real process says so, and nothing of it is left: no
   * stored run, no unit storage, no module; the first client run is the store's first.
   */
  @Test
  void theRunPathIsPrimedAsItServesAndLeavesNothing() throws Exception {
    Path state = dir.resolve("primed");
    try (DaemonProcess d = DaemonProcess.start(state, dir.resolve("p.sock"))) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!d.log().contains("run path primed in") && System.nanoTime() < deadline) {
        assertTrue(!d.log().contains("run path not primed"), d.log());
        Thread.sleep(50);
      }
      assertTrue(d.log().contains("(the last \"Completed\"), nothing stored"), d.log());
      StatusReply s = d.client().stub().getStatus(GetStatusRequest.getDefaultInstance());
      assertEquals(0, s.getStoredRuns());
      assertTrue(isEmptyOrAbsent(state.resolve("storage")), "unit storage left by the primer");
      assertTrue(isEmptyOrAbsent(state.resolve("modules")), "module left by the primer");
      assertTrue(isEmptyOrAbsent(state.resolve("prime")), "the primer's own storage left");

      Submissions.submit(
          d.client(), Submissions.exampleUnit("hello"), Submissions.exampleGrants("hello"));
      s = d.client().stub().getStatus(GetStatusRequest.getDefaultInstance());
      assertEquals(1, s.getStoredRuns());
    }
  }

  private static boolean isEmptyOrAbsent(Path dir) throws java.io.IOException {
    if (!java.nio.file.Files.exists(dir)) {
      return true;
    }
    try (java.util.stream.Stream<Path> entries = java.nio.file.Files.list(dir)) {
      return entries.findAny().isEmpty();
    }
  }
}
