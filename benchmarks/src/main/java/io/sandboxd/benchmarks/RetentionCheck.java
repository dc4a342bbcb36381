package io.sandboxd.benchmarks;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.SigningKey;
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
 * a command printing a greeting does). {@code run FILE} prunes the older half by {@code max_age_ms}
 * and times it, then times 20 checks with nothing more due (the check a daemon makes every second
 * or 64 runs), then the same for {@code max_runs} at a quarter of the runs; prints each. {@code
 * run-retention-compare.sh} is the daemon end of this; run it with each daemon jar's classes first
 * on the class path.
 */
public final class RetentionCheck {
  private RetentionCheck() {}

  private static final SigningKey KEY = SigningKey.fromSeed(new byte[32]);

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: RetentionCheck make FILE RUNS [io] | run FILE");
      System.exit(2);
    }
    Path file = Path.of(args[1]);
    if (args[0].equals("make")) {
      make(file, Integer.parseInt(args[2]), args.length > 3 && args[3].equals("io"));
      return;
    }
    try (RunStore s = RunStore.open(file, KEY)) {
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
      System.out.println(out.toString().trim());
    }
  }

  private static void make(Path file, int n, boolean io) {
    byte[] module = "retention module".getBytes(StandardCharsets.UTF_8);
    String grantsId = Blake3.hex("retention grants".getBytes(StandardCharsets.UTF_8));
    try (RunStore s = RunStore.open(file, KEY)) {
      for (int i = 0; i < n; i += 1000) {
        List<RunRecord> batch = new ArrayList<>();
        for (int j = i; j < Math.min(n, i + 1000); j++) {
          RunRecord.Builder r =
              SignedRun.completedBuilder(
                  KEY, "bench-host", runId(j), module, grantsId, 0, 65536, List.of(), 1_000 + j);
          batch.add((io ? r.io(GREETING) : r).build());
        }
        s.appendAll(batch);
      }
    }
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
