package io.sandboxd.benchmarks;

import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.RunStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * Run store appends per second from 16 threads, each append fsynced before it returns: {@code
 * maxBatch=1} is one transaction per run (no group commit), {@code 256} the daemon's group commit.
 * The store lives on the working directory's disk ({@code target/}, not a tmpfs), so fsync is real.
 * The signed envelopes are made once; each append stores them under a new run id.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Threads(16)
public class StoreAppendBench {
  @Param({"1", "256"})
  public int maxBatch;

  private Path dir;
  private RunStore store;
  private RunRecord template;
  private final AtomicLong next = new AtomicLong();

  @Setup(Level.Trial)
  public void open() throws IOException {
    dir = ScratchDirectory.underTarget("store-bench-");
    SigningKey key = SigningKey.generate();
    store = RunStore.open(dir.resolve("runs.db"), key);
    store.maxBatch(maxBatch);
    template = SignedRun.ofBench(key, "template", List.of());
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    RunStore.CommitStats c = store.commitStats();
    // The batch size group commit reached: runs per commit.
    System.out.printf(
        "%nmaxBatch=%d: %d runs in %d commits (%.1f runs per commit)%n",
        maxBatch, c.runs(), c.commits(), c.runs() / (double) Math.max(1, c.commits()));
    store.close();
    ScratchDirectory.delete(dir);
  }

  @Benchmark
  public void append() {
    String runId = String.format("%020x", next.incrementAndGet());
    store.append(
        RunRecord.builder()
            .run(runId, template.createdMs())
            .unit(template.unit(), template.grantsId())
            .outcomeJson(template.outcomeJson())
            .signed(template.receipt(), template.attestation(), template.segment())
            .journal(List.of(), Map.of())
            .log(template.log())
            .submission(template.module(), template.grantsJson(), template.entry())
            .build());
  }
}
