package io.sandboxd.benchmarks;

import io.sandboxd.attest.Blake3;
import io.sandboxd.daemon.store.RunIo;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.executor.ExecutionResult;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * A command, not JMH: what a retention check costs once many runs are pruned (issue 22). {@code
 * make FILE N} fills a store with N signed runs of one module, run i stored at 1000 + i ms ({@code
 * make FILE N io}: each a WASI command's run that wrote the same stdout, and nothing to stderr, as
 * a command printing a greeting does; {@code make FILE N units}: runs of two modules in turn).
 * {@code run FILE [io|units]} prunes the older half by {@code max_age_ms} and times it, then times
 * 20 checks with nothing more due (the check a daemon makes every second or 64 runs), then the same
 * for {@code max_runs} at a quarter of the runs; then, as a store whose signed records alone pass
 * {@code max_bytes} does, stores 20 rounds of 64 runs (as {@code make} made them), each round
 * followed by a check that prunes every run but the newest, and times those checks; prints each.
 * {@code run-retention-compare.sh} is the daemon end of this; run it with each daemon jar's classes
 * first on the class path.
 */
public final class RetentionCheck {
  private RetentionCheck() {}

  public static void main(String[] args) throws Exception {
    BenchSupport.usage(args, 2, "RetentionCheck make FILE RUNS [io|units] | run FILE [io|units]");
    Path file = Path.of(args[1]);
    if (args[0].equals("make")) {
      String kind = args.length > 3 ? args[3] : "";
      make(file, Integer.parseInt(args[2]), kind.equals("io"), kind.equals("units"));
      return;
    }
    String kind = args.length > 2 ? args[2] : "";
    try (RunStore s = RunStore.open(file, SignedRun.KEY)) {
      long n = s.count();
      String keep = runId(n - 1);
      long now = 1_000 + n;
      RunStore.Retention age = new RunStore.Retention(Long.MAX_VALUE, 0, n / 2);
      RunStore.Retention runs = new RunStore.Retention(Long.MAX_VALUE, n / 4, 0);
      StringBuilder out = new StringBuilder();
      for (var bound : List.of(age, runs)) {
        String name = bound == age ? "max_age_ms" : "max_runs";
        long t0 = System.nanoTime();
        int pruned = s.prune(bound, now, keep);
        out.append(
            String.format(
                "%s: pruned %d in %d ms, ", name, pruned, (System.nanoTime() - t0) / 1_000_000));
        long[] took = new long[21];
        for (int i = 0; i < took.length; i++) {
          t0 = System.nanoTime();
          s.prune(bound, now, keep);
          took[i] = System.nanoTime() - t0;
        }
        Arrays.sort(took);
        out.append(String.format("a check with nothing due %.2f ms (median); ", took[10] / 1e6));
      }
      // Past max_bytes by signed records alone: every run but the newest is due at each check.
      RunStore.Retention full = new RunStore.Retention(1, 0, 0);
      long[] took = new long[20];
      int pruned = 0;
      long next = n;
      for (int round = 0; round < took.length; round++) {
        List<RunRecord> batch = new ArrayList<>();
        for (int j = 0; j < 64; j++, next++) {
          batch.add(run(next, kind.equals("units") && next % 2 == 1, kind.equals("io")));
        }
        s.appendAll(batch);
        long t0 = System.nanoTime();
        pruned += s.prune(full, now, runId(next - 1));
        took[round] = System.nanoTime() - t0;
      }
      long first = took[0];
      long[] rest = Arrays.copyOfRange(took, 1, took.length);
      Arrays.sort(rest);
      out.append(
          String.format(
              "max_bytes past by records: first check %d ms, then each 64 runs' check %.2f ms"
                  + " (median), %.2f ms (max), %d pruned",
              first / 1_000_000, rest[rest.length / 2] / 1e6, rest[rest.length - 1] / 1e6, pruned));
      System.out.println(out.toString().trim());
    }
  }

  private static void make(Path file, int n, boolean io, boolean units) {
    try (RunStore s = RunStore.open(file, SignedRun.KEY)) {
      for (int i = 0; i < n; i += 1000) {
        List<RunRecord> batch = new ArrayList<>();
        for (int j = i; j < Math.min(n, i + 1000); j++) {
          batch.add(run(j, units && j % 2 == 1, io));
        }
        s.appendAll(batch);
      }
    }
  }

  /** Run {@code i}, stored at 1000 + i ms, of the second module if {@code other}. */
  private static RunRecord run(long i, boolean other, boolean io) {
    byte[] module = ("retention module" + (other ? " 2" : "")).getBytes(StandardCharsets.UTF_8);
    String grantsId = Blake3.hex("retention grants".getBytes(StandardCharsets.UTF_8));
    RunRecord.Builder r =
        SignedRun.completed(
            SignedRun.KEY,
            "bench-host",
            runId(i),
            module,
            grantsId,
            0,
            65536,
            List.of(),
            1_000 + i);
    return (io ? r.io(GREETING) : r).build();
  }

  // What a command that prints a greeting leaves: every run names the same two outputs.
  private static final RunIo GREETING =
      new RunIo(
          List.of("greet"),
          Optional.empty(),
          new ExecutionResult.Output("hello\n".getBytes(StandardCharsets.UTF_8), 6, true),
          ExecutionResult.Output.EMPTY,
          0,
          true);

  private static String runId(long i) {
    return String.format("run-%08d", i);
  }
}
