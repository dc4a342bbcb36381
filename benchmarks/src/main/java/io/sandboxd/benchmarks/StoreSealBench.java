package io.sandboxd.benchmarks;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.daemon.store.StoreVerifier;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * What the background verifier's seal costs a run: {@link #RUNS} hello-sized runs stored in this
 * process (three signed records, three journal entries, a log line), then one {@code
 * sealBeforeStop} over them at full speed, the check the background pass makes at its share of a
 * core. Time per op / {@link #RUNS} is the cost of one run; at the default 5% of a core the
 * verifier keeps up with a load of (0.05 / that) runs a second.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class StoreSealBench {
  /** Runs each op seals. */
  static final int RUNS = 2048;

  private final SigningKey key = SigningKey.generate();
  private final AtomicLong next = new AtomicLong();
  private final ExecutorService writers = Executors.newFixedThreadPool(16);
  private Path dir;
  private RunStore store;
  private StoreVerifier verifier;

  @Setup(Level.Trial)
  public void open() throws IOException {
    dir = ScratchDirectory.underTarget("seal-bench-");
    store = RunStore.open(dir.resolve("runs.db"), key);
    verifier = new StoreVerifier(store, s -> {});
  }

  /** Stores the next {@link #RUNS} runs, from 16 threads (group commit, as under load). */
  @Setup(Level.Invocation)
  public void fill() throws Exception {
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < 16; t++) {
      done.add(
          writers.submit(
              () -> {
                for (int i = 0; i < RUNS / 16; i++) {
                  store.append(helloRun(key, String.format("%020x", next.incrementAndGet())));
                }
              }));
    }
    for (Future<?> f : done) {
      f.get();
    }
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    writers.shutdownNow();
    verifier.close();
    store.close();
    ScratchDirectory.delete(dir);
  }

  @Benchmark
  public long seal() {
    long sealed = verifier.sealBeforeStop(600_000);
    if (sealed != RUNS) {
      throw new IllegalStateException("sealed " + sealed + " of " + RUNS + " runs");
    }
    return sealed;
  }

  /** A hello run as the daemon stores it: two clock readings and a denied random, one log line. */
  static RunRecord helloRun(SigningKey key, String runId) {
    List<String> journal = new ArrayList<>();
    String[] calls = {"clock_now", "clock_now", "random_u64"};
    String[] decisions = {"Allow", "Allow", "Deny"};
    for (int seq = 0; seq < calls.length; seq++) {
      journal.add(
          "{\"call\":\""
              + calls[seq]
              + "\",\"decision\":\""
              + decisions[seq]
              + "\",\"request\":\""
              + Blake3.hex(("request " + seq).getBytes(StandardCharsets.UTF_8))
              + "\",\"response\":\""
              + Blake3.hex(("response " + runId + seq).getBytes(StandardCharsets.UTF_8))
              + "\",\"schema\":\"sandbox.journal-entry/1\",\"seq\":"
              + seq
              + ",\"taint_after\":[]}");
    }
    RunRecord r = SignedRun.ofBench(key, runId, journal);
    return RunRecord.builder()
        .run(runId, r.createdMs())
        .unit(r.unit(), r.grantsId())
        .outcomeJson(r.outcomeJson())
        .signed(r.receipt(), r.attestation(), r.segment())
        .journal(journal, Map.of())
        .log("hello from a sandboxd unit")
        .submission(r.module(), r.grantsJson(), r.entry())
        .build();
  }
}
