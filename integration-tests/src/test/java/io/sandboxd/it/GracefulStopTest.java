package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetStatusRequest;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13 item 3 against the running daemon: SIGTERM stops admitting (new submissions get
 * UNAVAILABLE saying why, health says NOT_SERVING), the unit already running finishes and is
 * stored, and the daemon exits 0.
 */
class GracefulStopTest {
  @TempDir Path dir;

  @Test
  void sigtermDrainsTheRunningUnitRefusesNewOnesAndExitsZero() throws Exception {
    Path state = dir.resolve("state");
    // A unit that burns its whole 3 s CPU budget: still running when SIGTERM comes.
    String longSpin =
        Submissions.exampleGrants("spin").replace("\"cpu_time_ms\": 300", "\"cpu_time_ms\": 3000");
    assertTrue(longSpin.contains("3000"), longSpin);
    byte[] spin = Submissions.exampleUnit("spin");
    // store.seal_on_stop: the drained stop also seals the runs since the checkpoint (issue 22).
    Path config = dir.resolve("seal-on-stop.json");
    java.nio.file.Files.writeString(config, "{\"store\":{\"seal_on_stop\":true}}");
    DaemonProcess d =
        DaemonProcess.start(state, dir.resolve("s.sock"), "--config", config.toString());
    SubmitReply running;
    String refused = null;
    HealthCheckResponse.ServingStatus healthWhileDraining = null;
    try (DaemonClient c = new DaemonClient(d.socket)) {
      Submissions.submit(c, Submissions.exampleUnit("hello"), Submissions.exampleGrants("hello"));
      CompletableFuture<SubmitReply> inFlight =
          CompletableFuture.supplyAsync(() -> Submissions.submit(c, spin, longSpin));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (c.stub().getStatus(GetStatusRequest.getDefaultInstance()).getRunsInFlight() == 0) {
        assertTrue(System.nanoTime() < deadline, "the long unit never started");
        Thread.sleep(20);
      }
      d.process.destroy(); // SIGTERM, as systemctl stop sends
      while (refused == null && !inFlight.isDone()) {
        try {
          Submissions.submit(
              c, Submissions.exampleUnit("hello"), Submissions.exampleGrants("hello"));
          Thread.sleep(20);
        } catch (StatusRuntimeException e) {
          assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode(), e.toString());
          refused = e.getStatus().getDescription();
          healthWhileDraining =
              HealthGrpc.newBlockingStub(c.channel())
                  .withDeadlineAfter(10, TimeUnit.SECONDS)
                  .check(HealthCheckRequest.getDefaultInstance())
                  .getStatus();
        }
      }
      running = inFlight.get(60, TimeUnit.SECONDS);
    }
    assertTrue(refused != null, "no submission was refused while draining");
    assertTrue(refused.contains("sandboxd is stopping"), refused);
    assertEquals(HealthCheckResponse.ServingStatus.NOT_SERVING, healthWhileDraining);
    assertEquals("{\"Terminated\":{\"breach\":\"CpuTime\"}}", running.getOutcomeJson());
    assertTrue(d.process.waitFor(60, TimeUnit.SECONDS), "did not exit after draining");
    assertEquals(0, d.process.exitValue(), d.log());
    assertTrue(d.log().contains("drained: no submission in flight"), d.log());
    // After the drain the stop sealed the runs since the checkpoint (the background verifier seals
    // only every 1,024 runs), so the next start has none of them to check before it serves. Off by
    // default (a run changed while stopped is then refused at start, StoreTamperTest), so the
    // restart below, without the option, seals nothing at its own stop.
    java.util.regex.Matcher sealed =
        java.util.regex.Pattern.compile("run store: sealed (\\d+) run\\(s\\) before stopping")
            .matcher(d.log());
    assertTrue(sealed.find(), d.log());
    long runs = Long.parseLong(sealed.group(1));
    assertTrue(runs >= 2, d.log());

    // The drained run was stored before the daemon said goodbye.
    try (DaemonProcess again = DaemonProcess.start(state, dir.resolve("s2.sock"))) {
      DaemonProcess.Result show = again.ctl("runs", "show", running.getRunId());
      assertEquals(0, show.exit(), show.err());
      assertTrue(show.out().contains("CpuTime"), show.out());
      assertTrue(
          again.log().contains("the 0 run(s) after the sealed checkpoint at " + runs + " verify"),
          again.log());
      try (DaemonClient c = new DaemonClient(again.socket)) {
        Submissions.submit(c, Submissions.exampleUnit("hello"), Submissions.exampleGrants("hello"));
      }
      again.process.destroy();
      assertTrue(again.process.waitFor(60, TimeUnit.SECONDS), "did not exit");
      assertTrue(again.log().contains("drained: no submission in flight"), again.log());
      assertFalse(again.log().contains("before stopping"), again.log());
    }
    // Not sealed by that stop: the next start checks the one run it stored.
    try (DaemonProcess third = DaemonProcess.start(state, dir.resolve("s3.sock"))) {
      assertTrue(
          third.log().contains("the 1 run(s) after the sealed checkpoint at " + runs + " verify"),
          third.log());
    }
  }
}
