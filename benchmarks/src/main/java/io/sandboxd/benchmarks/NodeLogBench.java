package io.sandboxd.benchmarks;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.InclusionProof;
import io.sandboxd.attest.LogTree;
import io.sandboxd.attest.MerkleHash;
import io.sandboxd.attest.MerkleVerifier;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.TreeHead;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.RunStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Issue 14: what the node log costs a stored run, and proofs at 10^6 leaves. {@code store}: one op
 * = sign a run's receipt, attestation and segment and append it through {@link RunStore#append}
 * (group commit, fsync, 8 threads), with the log on or off ({@code log} param): ratio on/off = what
 * the log leaves of the store's runs/s. {@code prove1M} / {@code verify1M}: an inclusion proof from
 * kept subtree hashes at 10^6 leaves, and its verification (proof size printed at setup). {@code
 * proveStored}: {@link RunStore#proveInLog} of a stored run's receipt by its address in a store of
 * about 10^6 leaves, which finds the leaf bucket by bucket (schema 19) before it builds the proof.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@Fork(1)
public class NodeLogBench {
  /** A run store on a temporary file, log on or off. */
  @State(Scope.Benchmark)
  public static class Store {
    @Param({"on", "off"})
    public String log;

    final SigningKey key = SignedRun.KEY;
    final AtomicLong next = new AtomicLong();
    Path dir;
    RunStore store;

    @Setup(Level.Trial)
    public void open() throws Exception {
      dir = Files.createTempDirectory("nodelog-bench");
      store = RunStore.open(dir.resolve("runs.db"), key);
      store.configureLog("sandboxd/bench", 1024, 1000, log.equals("on"));
    }

    @TearDown(Level.Trial)
    public void close() throws Exception {
      System.out.println(
          "\nlog " + log + ": " + store.logSize() + " leaves, " + store.commitStats());
      store.close();
      ScratchDirectory.delete(dir);
    }
  }

  @Benchmark
  @Threads(8)
  public void store(Store s) {
    long n = s.next.incrementAndGet();
    s.store.append(run(s.key, "run-" + n, n));
  }

  /** A run as the supervisor stores it: three signed records, a short journal, its module. */
  static RunRecord run(SigningKey key, String runId, long createdMs) {
    byte[] module = ("module " + runId).getBytes(StandardCharsets.UTF_8);
    String grantsId = Blake3.hex(("grants " + runId).getBytes(StandardCharsets.UTF_8));
    return SignedRun.completed(
            key, "host-1", runId, module, grantsId, 7, 0, List.of("{\"n\":1}"), createdMs)
        .build();
  }

  /**
   * 10^6 leaves with every perfect subtree hash kept in memory (the store keeps levels 4 and up and
   * recomputes the three below from at most 8 leaves).
   */
  @State(Scope.Benchmark)
  public static class Million {
    static final int N = 1_000_000;
    final MerkleHash hash = MerkleHash.blake3();
    byte[][][] levels;
    byte[][] addresses;
    TreeHead head;
    InclusionProof proof;
    int index;
    final Random random = new Random(14);

    @Setup(Level.Trial)
    public void build() {
      LogTree.Frontier f = LogTree.Frontier.empty(hash);
      levels = new byte[21][][];
      for (int h = 0; h < levels.length; h++) {
        levels[h] = new byte[(N >> h) + 1][];
      }
      addresses = new byte[N][];
      for (int i = 0; i < N; i++) {
        addresses[i] = Blake3.hash(Integer.toString(i).getBytes(StandardCharsets.UTF_8));
        for (LogTree.Node n : f.append(hash.leaf(addresses[i]))) {
          levels[n.level()][(int) n.index()] = n.hash();
        }
      }
      head = f.head();
      index = 765_432;
      proof = LogTree.inclusionProof(hash, nodes(), index, N);
      System.out.println(
          "\n10^6 leaves: inclusion proof of leaf "
              + index
              + " has "
              + proof.path().size()
              + " hashes, "
              + proof.path().size() * 32
              + " bytes ("
              + io.sandboxd.attest.CanonicalJson.canonicalString(proof.toJson()).length()
              + " bytes as JSON)");
    }

    LogTree.Nodes nodes() {
      return (level, i) -> levels[level][(int) i];
    }
  }

  /** A store of {@code leaves} leaves, three a run, and the receipt addresses of its runs. */
  @State(Scope.Benchmark)
  public static class StoredLog {
    @Param({"1000000"})
    public int leaves;

    final SigningKey key = SignedRun.KEY;
    final Random random = new Random(19);
    Path dir;
    RunStore store;
    String[] receipts;

    @Setup(Level.Trial)
    public void fill() throws Exception {
      dir = Files.createTempDirectory("nodelog-stored");
      store = RunStore.open(dir.resolve("runs.db"), key);
      store.configureLog("sandboxd/bench", 1 << 20, 3_600_000, true);
      int runs = leaves / 3;
      receipts = new String[runs];
      int chunk = 2_000;
      for (int from = 0; from < runs; from += chunk) {
        int base = from;
        List<RunRecord> batch =
            java.util.stream.IntStream.range(from, Math.min(runs, from + chunk))
                .parallel()
                .mapToObj(i -> run(key, "run-" + i, i))
                .toList();
        for (int i = 0; i < batch.size(); i++) {
          receipts[base + i] = batch.get(i).receipt().address();
        }
        store.appendAll(batch);
      }
      store.logCheckpoint();
      System.out.println("\nstored log: " + store.logSize() + " leaves");
    }

    @TearDown(Level.Trial)
    public void close() throws Exception {
      store.close();
      ScratchDirectory.delete(dir);
    }
  }

  @Benchmark
  @BenchmarkMode(Mode.AverageTime)
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  public RunStore.LogInclusion proveStored(StoredLog s) {
    return s.store.proveInLog(s.receipts[s.random.nextInt(s.receipts.length)]);
  }

  @Benchmark
  public InclusionProof prove1M(Million m) {
    return LogTree.inclusionProof(m.hash, m.nodes(), m.random.nextInt(Million.N), Million.N);
  }

  @Benchmark
  public boolean verify1M(Million m) {
    return MerkleVerifier.blake3()
        .verifyInclusion(m.proof, m.hash.leaf(m.addresses[m.index]), m.head)
        .isValid();
  }
}
