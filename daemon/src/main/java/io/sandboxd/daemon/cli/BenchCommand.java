package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `sandboxctl bench`: a closed-loop load generator over the daemon's real gRPC API. Each of {@code
 * --concurrency} clients submits the unit, waits for its reply and submits again, for {@code
 * --duration} seconds after {@code --warmup}; the latencies (submit to reply) of the calls begun in
 * that window go into an HdrHistogram.
 */
@Command(
    name = "bench",
    description =
        "Submit a unit over and over from concurrent clients; print units/s and latency"
            + " percentiles.")
final class BenchCommand implements Callable<Integer> {
  /** Connections the clients share: within the daemon's default per-peer connection limit. */
  static final int MAX_CHANNELS = 16;

  @Mixin ModuleArgument module;

  @Option(names = "--grants", required = true, paramLabel = "FILE", description = "Grants JSON.")
  Path grants;

  @Option(names = "--entry", paramLabel = "NAME", description = "Entry export.")
  String entry = "";

  @Option(
      names = "--concurrency",
      paramLabel = "C",
      description = "Clients submitting at once (default 1, at most 1024).")
  int concurrency = 1;

  @Option(names = "--duration", paramLabel = "S", description = "Seconds measured (default 10).")
  double duration = 10;

  @Option(
      names = "--warmup",
      paramLabel = "S",
      description = "Seconds of load before measuring, not counted (default 1).")
  double warmup = 1;

  @Mixin DaemonSocket daemon;

  @Option(
      names = "--json",
      description =
          "One JSON object: units_per_s, p50_ms, p99_ms, p999_ms, max_ms, errors, runs, and the"
              + " settings.")
  boolean json;

  /** Refusals of the request itself, not of the load: retrying would only repeat them. */
  static final java.util.Set<io.grpc.Status.Code> NEVER_SUCCEEDS =
      java.util.EnumSet.of(
          io.grpc.Status.Code.INVALID_ARGUMENT,
          io.grpc.Status.Code.NOT_FOUND,
          io.grpc.Status.Code.FAILED_PRECONDITION,
          io.grpc.Status.Code.PERMISSION_DENIED,
          io.grpc.Status.Code.UNIMPLEMENTED);

  /** What one client saw of the calls it began in the measured window. */
  static final class ClientTally {
    final Histogram latencyNanos = new Histogram(TimeUnit.MINUTES.toNanos(10), 3);
    long runs;
    long errors;
    long notCompleted;
  }

  @Override
  public Integer call() {
    if (concurrency < 1 || concurrency > 1024) {
      return Sandboxctl.unusable("bench", "--concurrency must be 1..1024");
    }
    if (!(duration > 0 && duration <= 86_400) || !(warmup >= 0 && warmup <= 3_600)) {
      return Sandboxctl.unusable(
          "bench", "--duration must be in (0, 86400], --warmup in [0, 3600]");
    }
    SubmitRequest request;
    try {
      SubmitRequest.Builder req =
          SubmitRequest.newBuilder().setEntry(entry).setGrantsJson(Input.text(grants));
      request = module.into(req).build();
    } catch (Input.Unreadable e) {
      return Sandboxctl.unusable("bench", e.getMessage());
    }
    Path sock = daemon.path();
    List<DaemonClient> channels = new ArrayList<>();
    List<ClientTally> tallies = new ArrayList<>();
    AtomicReference<StatusRuntimeException> firstError = new AtomicReference<>();
    long measuredNanos;
    try {
      for (int i = 0; i < Math.min(concurrency, MAX_CHANNELS); i++) {
        channels.add(new DaemonClient(sock));
      }
      long start = System.nanoTime();
      long measureFrom = start + (long) (warmup * 1e9);
      long end = measureFrom + (long) (duration * 1e9);
      List<Thread> clients = new ArrayList<>();
      for (int i = 0; i < concurrency; i++) {
        ClientTally tally = new ClientTally();
        tallies.add(tally);
        DaemonClient channel = channels.get(i % channels.size());
        Thread t =
            new Thread(
                () ->
                    loop(
                        () ->
                            channel.stub().withDeadlineAfter(10, TimeUnit.MINUTES).submit(request),
                        measureFrom,
                        end,
                        tally,
                        firstError),
                "bench-client-" + i);
        t.setDaemon(true);
        t.start();
        clients.add(t);
      }
      for (Thread t : clients) {
        t.join();
      }
      // Calls started in the window may end after it: the window is until the last one ended.
      measuredNanos = Math.max(System.nanoTime(), end) - measureFrom;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Sandboxctl.UNUSABLE;
    } finally {
      channels.forEach(DaemonClient::close);
    }
    Histogram all = new Histogram(TimeUnit.MINUTES.toNanos(10), 3);
    long runs = 0;
    long errors = 0;
    long notCompleted = 0;
    for (ClientTally t : tallies) {
      all.add(t.latencyNanos);
      runs += t.runs;
      errors += t.errors;
      notCompleted += t.notCompleted;
    }
    if (runs == 0 && firstError.get() != null) {
      daemon.complain("bench", firstError.get());
      return Sandboxctl.UNUSABLE;
    }
    double seconds = measuredNanos / 1e9;
    double unitsPerS = runs / seconds;
    if (json) {
      ObjectNode o = CanonicalJson.mapper().createObjectNode();
      o.put("units_per_s", round(unitsPerS));
      o.put("p50_ms", ms(all.getValueAtPercentile(50)));
      o.put("p99_ms", ms(all.getValueAtPercentile(99)));
      o.put("p999_ms", ms(all.getValueAtPercentile(99.9)));
      o.put("max_ms", ms(all.getMaxValue()));
      o.put("errors", errors);
      o.put("runs", runs);
      o.put("not_completed", notCompleted);
      o.put("concurrency", concurrency);
      o.put("duration_s", round(seconds));
      o.put("by", request.getModuleAddress().isEmpty() ? "bytes" : "address");
      try {
        System.out.println(CanonicalJson.mapper().writeValueAsString(o));
      } catch (JsonProcessingException e) {
        throw new IllegalStateException(e);
      }
    } else {
      System.out.printf(
          "%d clients, %.1f s, by %s: %d runs, %.1f units/s%n",
          concurrency,
          seconds,
          request.getModuleAddress().isEmpty() ? "bytes" : "address",
          runs,
          unitsPerS);
      System.out.printf(
          "latency ms: p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f%n",
          ms(all.getValueAtPercentile(50)),
          ms(all.getValueAtPercentile(99)),
          ms(all.getValueAtPercentile(99.9)),
          ms(all.getMaxValue()));
      System.out.printf("errors %d  not completed %d%n", errors, notCompleted);
      if (firstError.get() != null) {
        System.out.println("first error: " + RpcErrors.describe(firstError.get(), sock));
      }
    }
    return errors == 0 && runs > 0 ? 0 : RunCommand.NOT_COMPLETED;
  }

  /**
   * One client: calls {@code submit} until {@code end}, counting the calls it began at or after
   * {@code measureFrom}. A call begun in the warm-up is not counted even when it ends in the
   * window: its latency is the warm-up's (a fresh daemon's first run by bytes takes about a second,
   * which was reported as the window's maximum). One begun in the window is counted even when it
   * ends after {@code end}: the window lasts until the last of them ended.
   */
  static void loop(
      Supplier<SubmitReply> submit,
      long measureFrom,
      long end,
      ClientTally tally,
      AtomicReference<StatusRuntimeException> firstError) {
    while (true) {
      long t0 = System.nanoTime();
      if (t0 >= end) {
        return;
      }
      try {
        SubmitReply r = submit.get();
        long done = System.nanoTime();
        if (t0 >= measureFrom) {
          tally.latencyNanos.recordValue(
              Math.min(done - t0, tally.latencyNanos.getHighestTrackableValue()));
          tally.runs++;
          if (!r.getOutcomeJson().equals("\"Completed\"")) {
            tally.notCompleted++;
          }
        }
      } catch (StatusRuntimeException e) {
        firstError.compareAndSet(null, e);
        boolean never = NEVER_SUCCEEDS.contains(e.getStatus().getCode());
        if (never || t0 >= measureFrom) {
          tally.errors++;
        }
        if (never) {
          // The same request will be refused again: stop this client.
          return;
        }
      }
    }
  }

  private static double ms(long nanos) {
    return round(nanos / 1e6);
  }

  private static double round(double v) {
    return Math.round(v * 1000) / 1000.0;
  }
}
