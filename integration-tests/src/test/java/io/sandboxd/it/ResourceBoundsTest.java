package io.sandboxd.it;

import static io.sandboxd.it.Submissions.submit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetRunRequest;
import io.sandboxd.daemon.rpc.ListRunsRequest;
import io.sandboxd.daemon.rpc.ReplayReply;
import io.sandboxd.daemon.rpc.ReplayRequest;
import io.sandboxd.daemon.rpc.RunInfo;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 8 items 11 and 13 through the running daemon: idle socket connections cannot take its file
 * descriptors, refusals by the grant are not journaled, one run's journal is bounded in bytes, and
 * store retention prunes old runs' bulky data and says so.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ResourceBoundsTest {
  /** The daemon's descriptor limit: fewer than the idle connections the test opens. */
  static final int DAEMON_NOFILE = 512;

  static final int IDLE_CONNECTIONS = 600;
  static final int MAX_TOTAL = 200;
  static final long IDLE_TIMEOUT_MS = 3_000;
  static final long JOURNAL_MAX_BYTES = 256 * 1024;
  static final long STORE_MAX_BYTES = 2L << 20;

  @TempDir static Path dir;
  static DaemonProcess daemon;
  static Path socket;
  static Path state;
  static Path log;
  static DaemonClient client;

  @BeforeAll
  static void start() throws Exception {
    state = dir.resolve("state");
    socket = dir.resolve("run/sandboxd.sock");
    Files.createDirectories(state);
    Path config = dir.resolve("sandboxd.json");
    Files.writeString(
        config,
        "{\"connections\":{\"max_total\":"
            + MAX_TOTAL
            + ",\"max_per_peer\":"
            + MAX_TOTAL
            + ",\"idle_timeout_ms\":"
            + IDLE_TIMEOUT_MS
            + ",\"handshake_timeout_ms\":2000},"
            + "\"journal\":{\"max_bytes\":"
            + JOURNAL_MAX_BYTES
            + "},\"store\":{\"max_bytes\":"
            + STORE_MAX_BYTES
            + "}}");
    List<String> cmd =
        new ArrayList<>(
            List.of("prlimit", "--nofile=" + DAEMON_NOFILE + ":" + DAEMON_NOFILE, "--"));
    cmd.addAll(DaemonProcess.serveCommand(List.of(), state, socket, "--config", config.toString()));
    log = dir.resolve("daemon.log");
    daemon = DaemonProcess.start(new ProcessBuilder(cmd), state, socket, log);
    client = new DaemonClient(socket);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  static String log() throws IOException {
    return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
  }

  /** A unit drawing {@code n} random numbers with the `sandbox` ABI, ignoring the status. */
  static byte[] randomLoop(int n) {
    return Wat2Wasm.parse(
        """
        (module
          (import "sandbox" "random_u64" (func $r (param i32) (result i32)))
          (memory 1)
          (func (export "run") (result i32)
            (local $i i32)
            (loop $l
              (drop (call $r (i32.const 0)))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $l (i32.lt_u (local.get $i) (i32.const %d))))
            (i32.const 0)))
        """
            .formatted(n));
  }

  static String grants(boolean random) {
    return ("{\"compute\":{\"devices\":[],\"energy_budget_uj\":500000000,\"cpu_time_ms\":30000,"
            + "\"memory_bytes\":131072},\"storage\":{\"read\":[],\"write\":[],\"delete\":[]},"
            + "\"network\":{\"outbound\":[],\"inbound\":false},"
            + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
            + "\"host\":{\"logging\":true,\"clock\":false,\"random\":%s,\"inference\":false}}")
        .formatted(random);
  }

  static long storeBytes() throws IOException {
    long n = 0;
    for (String f : List.of("runs.db", "runs.db-wal")) {
      Path p = state.resolve(f);
      if (Files.exists(p)) {
        n += Files.size(p);
      }
    }
    return n;
  }

  /** Whether the peer closed {@code ch} (reads drain what the server sent first). */
  static boolean closedByPeer(SocketChannel ch) {
    ByteBuffer buf = ByteBuffer.allocate(4096);
    try {
      int r;
      do {
        buf.clear();
        r = ch.read(buf);
      } while (r > 0);
      return r < 0;
    } catch (IOException e) {
      return true;
    }
  }

  @Test
  @Order(1)
  void idleConnectionsPastTheLimitAreClosedAndAClientIsStillAnswered() throws Exception {
    List<SocketChannel> idle = new ArrayList<>();
    try {
      for (int i = 0; i < IDLE_CONNECTIONS; i++) {
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        ch.connect(UnixDomainSocketAddress.of(socket));
        ch.configureBlocking(false);
        idle.add(ch);
      }
      // Past the total, connections are closed at once (well before the idle timeout).
      long soon = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(IDLE_TIMEOUT_MS / 2);
      int closed = 0;
      while (System.nanoTime() < soon) {
        closed = 0;
        for (SocketChannel ch : idle) {
          closed += closedByPeer(ch) ? 1 : 0;
        }
        if (closed >= IDLE_CONNECTIONS - MAX_TOTAL) {
          break;
        }
        Thread.sleep(100);
      }
      assertTrue(
          closed >= IDLE_CONNECTIONS - MAX_TOTAL,
          closed + " of " + IDLE_CONNECTIONS + " closed before the idle timeout");

      // A real client (a new connection) is answered once the idle ones time out.
      try (DaemonClient fresh = new DaemonClient(socket)) {
        var runs =
            fresh
                .stub()
                .withDeadlineAfter(IDLE_TIMEOUT_MS * 5, TimeUnit.MILLISECONDS)
                .withWaitForReady()
                .listRuns(ListRunsRequest.newBuilder().setLimit(1).build());
        assertTrue(runs.isInitialized(), "answered");
      }

      // Every idle connection is closed after the idle timeout.
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(IDLE_TIMEOUT_MS * 5);
      int open;
      do {
        open = 0;
        for (SocketChannel ch : idle) {
          open += closedByPeer(ch) ? 0 : 1;
        }
        if (open > 0) {
          Thread.sleep(200);
        }
      } while (open > 0 && System.nanoTime() < deadline);
      assertEquals(0, open, "idle connections still open after the idle timeout");
    } finally {
      for (SocketChannel ch : idle) {
        ch.close();
      }
    }
    // The daemon kept descriptors for its own work: a run is stored and answered.
    byte[] hello = Submissions.exampleUnit("hello");
    String helloGrants = Submissions.exampleGrants("hello");
    assertEquals("\"Completed\"", submit(client, hello, helloGrants).getOutcomeJson());
    assertTrue(!log().contains("Too many open files"), log());
  }

  @Test
  @Order(2)
  void deniedCallsInALoopDoNotGrowTheStore() throws Exception {
    int draws = 200_000;
    long before = storeBytes();
    SubmitReply r = submit(client, randomLoop(draws), grants(false));
    assertEquals("\"Completed\"", r.getOutcomeJson(), "denied draws are no reason to stop");
    long grown = storeBytes() - before;
    assertTrue(grown < 512 * 1024, draws + " denied draws grew the store by " + grown + " bytes");
    // The replay recomputes the refusals from the grants and reaches the same root.
    ReplayReply replay =
        client.stub().replay(ReplayRequest.newBuilder().setRunId(r.getRunId()).build());
    assertTrue(replay.getMatches(), replay.toString());
  }

  @Test
  @Order(3)
  void aRunPastTheJournalByteBoundEndsAsFailedWithAClearReason() {
    SubmitReply r = submit(client, randomLoop(100_000), grants(true));
    String reason =
        CanonicalJson.parse(r.getOutcomeJson()).path("Failed").path("reason").asText("");
    assertTrue(reason.contains("replay journal full"), r.getOutcomeJson());
    assertTrue(reason.contains(Long.toString(JOURNAL_MAX_BYTES)), reason);
    assertTrue(daemon.process.isAlive());
  }

  @Test
  @Order(4)
  void retentionPrunesOldRunsJournalsAndSaysSo() throws Exception {
    // Each run journals about 800 draws (~250 KB with indexes); 16 of them exceed 2 MiB.
    List<String> ids = new ArrayList<>();
    String nodeKey = null;
    for (int i = 0; i < 16; i++) {
      SubmitReply r = submit(client, randomLoop(800), grants(true));
      assertEquals("\"Completed\"", r.getOutcomeJson());
      ids.add(r.getRunId());
      nodeKey =
          io.sandboxd.attest.Envelope.fromJson(
                  io.sandboxd.attest.CanonicalJson.parse(r.getReceipt()))
              .publicKey();
    }
    String oldest = ids.get(0);
    String newest = ids.get(ids.size() - 1);

    RunInfo info = client.stub().getRun(GetRunRequest.newBuilder().setRunId(oldest).build());
    assertTrue(info.getPruned().contains("store.max_bytes"), info.toString());
    assertEquals(
        "", client.stub().getRun(GetRunRequest.newBuilder().setRunId(newest).build()).getPruned());

    StatusRuntimeException e =
        assertThrows(
            StatusRuntimeException.class,
            () -> client.stub().replay(ReplayRequest.newBuilder().setRunId(oldest).build()));
    assertEquals(Status.Code.FAILED_PRECONDITION, e.getStatus().getCode());
    assertTrue(e.getStatus().getDescription().contains("journal pruned"), e.getMessage());
    assertTrue(
        client.stub().replay(ReplayRequest.newBuilder().setRunId(newest).build()).getMatches());

    // The CLI says so, and the pruned run's signed chain still verifies.
    DaemonProcess.Result shown =
        DaemonProcess.sandboxctl(null, "runs", "show", oldest, "--socket", socket.toString());
    assertEquals(0, shown.exit(), shown.err());
    assertTrue(shown.out().contains("pruned"), shown.out());
    DaemonProcess.Result export =
        DaemonProcess.sandboxctl(
            null, "runs", "show", oldest, "--export", "--socket", socket.toString());
    DaemonProcess.Result verified =
        DaemonProcess.sandboxctl(
            export.out().getBytes(StandardCharsets.UTF_8), "verify", "-", "--signer", nodeKey);
    assertEquals(0, verified.exit(), verified.out() + verified.err());

    // The store's main file stays near its bound (freed pages are reused).
    assertTrue(
        Files.size(state.resolve("runs.db")) < 2 * STORE_MAX_BYTES,
        "runs.db " + Files.size(state.resolve("runs.db")));
  }
}
