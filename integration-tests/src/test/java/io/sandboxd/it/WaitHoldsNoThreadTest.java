package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Context;
import io.grpc.stub.StreamObserver;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.DurableRunReply;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.GetStatusRequest;
import io.sandboxd.daemon.rpc.SandboxdGrpc;
import io.sandboxd.daemon.rpc.WaitRunRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 24 item 2 through the running daemon: 10,000 WaitRun and SuspendRun calls (half each) on a
 * running durable run hold no thread each, the daemon keeps serving meanwhile, and calls abandoned
 * by a disconnect or by a client's cancellation leave nothing behind; suspends held by the thousand
 * are all answered when their run ends. Prints the daemon's threads and resident memory.
 */
class WaitHoldsNoThreadTest {
  @TempDir Path dir;

  static final byte[] SPINS = CallFairnessTest.SPINS;
  static final int CONNECTIONS = 40;
  static final int PER_CONNECTION = 250;

  /** A detached run of {@link #SPINS} under a CPU grant of {@code cpuMs}: its id. */
  static String spinning(DaemonClient c, long cpuMs) {
    return Submissions.detached(c, SPINS, WarmPoolTest.grants(1 << 20, cpuMs), "step");
  }

  @Test
  void tenThousandWaitsHoldNoThreadsAndLeaveNothingWhenAbandoned() throws Exception {
    Path socket = dir.resolve("d.sock");
    try (DaemonProcess d = DaemonProcess.start(dir.resolve("state"), socket);
        DaemonClient c = new DaemonClient(socket)) {
      String run = spinning(c, 60000);
      long pid = d.process.pid();
      Thread.sleep(500);
      int threads0 = count(pid);
      long rss0 = rssKb(pid);

      List<DaemonClient> clients = new ArrayList<>();
      List<Context.CancellableContext> contexts = new ArrayList<>();
      AtomicInteger answered = new AtomicInteger();
      for (int i = 0; i < CONNECTIONS; i++) {
        DaemonClient w = new DaemonClient(socket);
        clients.add(w);
        SandboxdGrpc.SandboxdStub stub = SandboxdGrpc.newStub(w.channel());
        Context.CancellableContext ctx = Context.current().withCancellation();
        contexts.add(ctx);
        for (int k = 0; k < PER_CONNECTION; k++) {
          StreamObserver<DurableRunReply> counted =
              new StreamObserver<DurableRunReply>() {
                @Override
                public void onNext(DurableRunReply value) {
                  answered.incrementAndGet();
                }

                @Override
                public void onError(Throwable t) {}

                @Override
                public void onCompleted() {}
              };
          if (k % 2 == 0) {
            ctx.run(
                () ->
                    stub.waitRun(
                        WaitRunRequest.newBuilder().setRunId(run).setTimeoutMs(300_000).build(),
                        counted));
          } else {
            // The spinning guest never reaches a park boundary: each suspend stays held.
            ctx.run(
                () ->
                    stub.suspendRun(DurableRunRequest.newBuilder().setRunId(run).build(), counted));
          }
        }
      }
      Thread.sleep(3000);
      int threads1 = count(pid);
      long rss1 = rssKb(pid);
      // Still serving, on a connection of its own, while the waits are held.
      long t0 = System.nanoTime();
      assertTrue(
          c.stub()
                  .withDeadlineAfter(10, TimeUnit.SECONDS)
                  .getStatus(GetStatusRequest.getDefaultInstance())
                  .getUptimeMs()
              > 0);
      long statusMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertEquals(0, answered.get(), "the run is still running: no wait may have been answered");

      // Half are cancelled by their clients, half abandoned by closing their connections.
      for (int i = 0; i < CONNECTIONS / 2; i++) {
        contexts.get(i).cancel(null);
      }
      for (int i = CONNECTIONS / 2; i < CONNECTIONS; i++) {
        clients.get(i).close();
      }
      for (int i = 0; i < CONNECTIONS / 2; i++) {
        clients.get(i).close();
      }
      int threads2 = settle(pid, threads0 + 8);
      long rss2 = rssKb(pid);
      System.out.printf(
          "waits and suspends: %d on %d connections; daemon threads %d -> %d while held -> %d after;"
              + " RSS %d -> %d -> %d KiB; GetStatus meanwhile %d ms%n",
          CONNECTIONS * PER_CONNECTION,
          CONNECTIONS,
          threads0,
          threads1,
          threads2,
          rss0,
          rss1,
          rss2,
          statusMs);
      // A thread per call would be 10,000; the call handlers' pool (FairCalls) has 64 at most here.
      assertTrue(threads1 <= threads0 + 64 + 8, threads0 + " -> " + threads1);
      assertTrue(threads2 <= threads0 + 8, threads0 + " -> " + threads2);
      assertTrue(d.process.isAlive());
    }
  }

  @Test
  void suspendsHeldByTheThousandAreAllAnsweredWhenTheirRunEnds() throws Exception {
    Path socket = dir.resolve("e.sock");
    try (DaemonProcess d = DaemonProcess.start(dir.resolve("state-e"), socket);
        DaemonClient c = new DaemonClient(socket)) {
      // Stopped cold by its CPU grant after 4 s without ever reaching a park boundary.
      String run = spinning(c, 4000);
      int calls = 2000;
      Answers<DurableRunReply> states = new Answers<>(calls, DurableRunReply::getState);
      List<DaemonClient> clients = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        clients.add(new DaemonClient(socket));
      }
      try {
        for (int k = 0; k < calls; k++) {
          SandboxdGrpc.newStub(clients.get(k % clients.size()).channel())
              .suspendRun(DurableRunRequest.newBuilder().setRunId(run).build(), states);
        }
        states.assertAllReplied(120);
        assertTrue(
            states.kept.stream().allMatch("terminated"::equals),
            String.valueOf(states.kept.peek()));
        // Suspending a run that is over is refused at once, naming its state.
        io.grpc.StatusRuntimeException late =
            org.junit.jupiter.api.Assertions.assertThrows(
                io.grpc.StatusRuntimeException.class,
                () -> c.stub().suspendRun(DurableRunRequest.newBuilder().setRunId(run).build()));
        assertEquals(io.grpc.Status.Code.FAILED_PRECONDITION, late.getStatus().getCode());
        assertTrue(late.getStatus().getDescription().contains("terminated"), late.getMessage());
        assertTrue(d.process.isAlive());
      } finally {
        for (DaemonClient x : clients) {
          x.close();
        }
      }
    }
  }

  private static int count(long pid) throws Exception {
    return Poll.entries(Path.of("/proc/" + pid + "/task"));
  }

  private static long rssKb(long pid) throws Exception {
    for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
      if (line.startsWith("VmRSS:")) {
        return Long.parseLong(line.replaceAll("[^0-9]", ""));
      }
    }
    return -1;
  }

  private static int settle(long pid, int bound) throws Exception {
    return Poll.settle(() -> count(pid), bound, 90);
  }
}
