package io.sandboxd.benchmarks;

import io.sandboxd.daemon.store.FleetOutbox;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.RunStore;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A command, not JMH: what the fleet shipper's polls cost the run path (issue 22). {@code make FILE
 * N} fills a store with N signed runs and a fleet proof for every record (a node that has shipped
 * all it holds; {@code make FILE N stuck}: all but the first, a record the aggregator never proves,
 * a damaged one). {@code run FILE APPENDS} stores APPENDS runs one by one (each fsynced, 2 ms
 * apart) with no poller, then again with a thread polling a new outbox as {@code RecordShipper}
 * does after a start (1,000 at most; 20 ms after a poll that found some or stopped at its bound,
 * else 250 ms), and prints each phase's append latency and the polls' own time, the first (which
 * begins reading the store) apart. {@code run-outbox-compare.sh} runs it against two daemon jars in
 * one session.
 */
public final class FleetOutboxPoll {
  private FleetOutboxPoll() {}

  public static void main(String[] args) throws Exception {
    BenchSupport.usage(args, 3, "FleetOutboxPoll make FILE RUNS [stuck] | run FILE APPENDS");
    Path file = Path.of(args[1]);
    int n = Integer.parseInt(args[2]);
    if (args[0].equals("make")) {
      make(file, n, args.length > 3 && args[3].equals("stuck"));
    } else {
      run(file, n);
    }
  }

  private static void make(Path file, int runs, boolean stuck) throws Exception {
    try (RunStore s = RunStore.open(file, SignedRun.KEY)) {
      for (int i = 0; i < runs; i += 1000) {
        List<RunRecord> batch = new ArrayList<>();
        for (int j = i; j < Math.min(runs, i + 1000); j++) {
          batch.add(SignedRun.ofBench(SignedRun.KEY, String.format("run-%08d", j), List.of()));
        }
        s.appendAll(batch);
      }
    }
    // Proofs as the shipper keeps them, written directly: a fixture, not what is measured.
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
        Statement st = c.createStatement()) {
      for (String table : List.of("records", "run_records")) {
        if (hasTable(c, table)) {
          st.executeUpdate(
              "INSERT OR IGNORE INTO fleet_proofs (address, tree_size, proof, proven_ms)"
                  + " SELECT address, 1, '{}', 0 FROM "
                  + table);
        }
      }
      if (stuck) {
        st.executeUpdate(
            "DELETE FROM fleet_proofs WHERE address ="
                + " (SELECT address FROM run_records ORDER BY rowid LIMIT 1)");
      }
    }
  }

  private static void run(Path file, int appends) throws Exception {
    try (RunStore s = RunStore.open(file, SignedRun.KEY)) {
      long[] quiet = appendLoop(s, appends, "quiet-");
      // A start's outbox: its first polls read the store from the start while appends go on.
      FleetOutbox outbox = new FleetOutbox(s);
      AtomicBoolean stop = new AtomicBoolean();
      List<Long> polls = new ArrayList<>();
      Thread poller =
          new Thread(
              () -> {
                while (!stop.get()) {
                  long p0 = System.nanoTime();
                  int got = outbox.unshipped(1000).size();
                  synchronized (polls) {
                    polls.add(System.nanoTime() - p0);
                  }
                  try {
                    Thread.sleep(got == 0 && !behind(outbox) ? 250 : 20);
                  } catch (InterruptedException e) {
                    return;
                  }
                }
              },
              "poller");
      poller.start();
      long[] busy = appendLoop(s, appends, "polled-");
      stop.set(true);
      poller.join();
      long[] p;
      long firstPollMs;
      synchronized (polls) {
        firstPollMs = polls.get(0) / 1_000_000;
        p = polls.stream().mapToLong(Long::longValue).sorted().toArray();
      }
      System.out.printf(
          "first poll %d ms | append p50/p99/max us, no poller: %d %d %d | polled: %d %d %d"
              + " | %d polls, p50 %d us, max %d us%n",
          firstPollMs,
          at(quiet, 50),
          at(quiet, 99),
          at(quiet, 100),
          at(busy, 50),
          at(busy, 99),
          at(busy, 100),
          p.length,
          at(p, 50),
          at(p, 100));
    }
  }

  /**
   * {@link FleetOutbox#behind}, as {@code RecordShipper} asks it; false for a daemon jar from
   * before polls were bounded, which always read through.
   */
  private static boolean behind(FleetOutbox outbox) {
    try {
      return (Boolean) FleetOutbox.class.getMethod("behind").invoke(outbox);
    } catch (ReflectiveOperationException e) {
      return false;
    }
  }

  private static long[] appendLoop(RunStore s, int n, String prefix) throws Exception {
    long[] took = new long[n];
    for (int i = 0; i < n; i++) {
      RunRecord r = SignedRun.ofBench(SignedRun.KEY, prefix + System.nanoTime(), List.of());
      long t0 = System.nanoTime();
      s.append(r);
      took[i] = System.nanoTime() - t0;
      Thread.sleep(2);
    }
    Arrays.sort(took);
    return took;
  }

  /** The {@code pct}th percentile of sorted nanoseconds, in microseconds (100: the largest). */
  private static long at(long[] sorted, int pct) {
    if (sorted.length == 0) {
      return 0;
    }
    int i = Math.min(sorted.length - 1, sorted.length * pct / 100);
    return sorted[i] / 1000;
  }

  private static boolean hasTable(Connection c, String table) throws Exception {
    try (ResultSet rs = c.getMetaData().getTables(null, null, table, null)) {
      return rs.next();
    }
  }
}
