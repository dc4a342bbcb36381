package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetRecordsRequest;
import io.sandboxd.daemon.rpc.GetRunRequest;
import io.sandboxd.daemon.rpc.RecordsReply;
import io.sandboxd.daemon.rpc.RunInfo;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10 item 6 against the running daemon: SIGKILL while 16 clients submit (their runs committed
 * in shared batches), restart on the same state, and every acknowledged run is there and verifies.
 */
class GroupCommitCrashTest {
  @TempDir Path dir;

  @Test
  void aKillDuringConcurrentSubmissionsLosesNothingAcknowledged() throws Exception {
    byte[] hello = Submissions.exampleUnit("hello");
    String grants = Submissions.exampleGrants("hello");
    Path state = dir.resolve("state");
    Path socket = dir.resolve("run/sandboxd.sock");
    ConcurrentLinkedQueue<String> acknowledged = new ConcurrentLinkedQueue<>();
    AtomicBoolean stop = new AtomicBoolean();
    DaemonProcess daemon = DaemonProcess.start(state, socket);
    List<Thread> clients = new ArrayList<>();
    try (DaemonClient client = new DaemonClient(socket)) {
      for (int i = 0; i < 16; i++) {
        Thread t =
            new Thread(
                () -> {
                  while (!stop.get()) {
                    try {
                      SubmitReply r = Submissions.submit(client, hello, grants, "run", 30);
                      acknowledged.add(r.getRunId());
                    } catch (StatusRuntimeException e) {
                      // The daemon died under this call: not acknowledged, nothing promised.
                    }
                  }
                });
        t.start();
        clients.add(t);
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (acknowledged.size() < 200 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      // SIGKILL: no shutdown hook, no orderly close of the store.
      daemon.process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
      stop.set(true);
      for (Thread t : clients) {
        t.join(60_000);
      }
    } finally {
      stop.set(true);
      daemon.close();
    }
    List<String> acked = List.copyOf(acknowledged);
    assertTrue(acked.size() >= 50, "too few runs before the kill: " + acked.size());
    // The restarted daemon verifies every chain and the signed ledger before it serves.
    try (DaemonProcess again = DaemonProcess.start(state, socket);
        DaemonClient client = new DaemonClient(socket)) {
      assertTrue(
          again.log().contains("every record and column checks against the signed ledger"),
          again.log());
      for (String runId : acked) {
        RunInfo info = client.stub().getRun(GetRunRequest.newBuilder().setRunId(runId).build());
        assertEquals("\"Completed\"", info.getOutcomeJson(), runId);
        RecordsReply rec =
            client.stub().getRecords(GetRecordsRequest.newBuilder().setRunId(runId).build());
        assertEquals(1, rec.getReceiptsCount(), runId);
        assertEquals(
            runId,
            Envelope.fromJson(CanonicalJson.parse(rec.getReceipts(0)))
                .core()
                .get("run_id")
                .asText());
      }
    }
  }
}
