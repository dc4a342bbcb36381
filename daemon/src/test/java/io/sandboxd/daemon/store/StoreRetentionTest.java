package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.executor.ExecutionResult;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Retention over a backlog larger than one chunk: every due run is pruned, oldest first, never the
 * run just stored, and a later check goes on from where the walk stopped.
 */
class StoreRetentionTest {
  @TempDir Path tmp;

  private static String id(int i) {
    return String.format("run-%05d", i);
  }

  private static void append(RunStore store, int from, int to) {
    for (int i = from; i < to; i++) {
      store.append(TestRuns.simple(KEY, id(i), 1_000 + i));
    }
  }

  private static final SigningKey KEY = SigningKey.generate();

  @Test
  void aBacklogPastMaxBytesIsPrunedInChunksAndTheWalkGoesOn() throws Exception {
    int runs = 2 * StoreRetention.CHUNK_RUNS + 50;
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), KEY)) {
      append(store, 0, runs);
      // Signed records alone pass one byte: every run but the one kept is due.
      RunStore.Retention tiny = new RunStore.Retention(1, 0, 0);
      String keep = id(runs - 1);
      assertEquals(runs - 1, store.prune(tiny, 5_000, keep));
      for (int i = 0; i < runs - 1; i++) {
        assertEquals("store.max_bytes", store.pruned(id(i)).orElseThrow().reason(), id(i));
      }
      assertTrue(store.pruned(keep).isEmpty(), "the run just stored is kept");
      // Later runs: the walk reaches the one kept before and every new one but the newest.
      append(store, runs, runs + 10);
      assertEquals(10, store.prune(tiny, 6_000, id(runs + 9)));
      assertTrue(store.pruned(keep).isPresent());
      assertTrue(store.pruned(id(runs + 9)).isEmpty());
      assertEquals(0, store.prune(tiny, 7_000, id(runs + 9)), "nothing is left to prune");
      assertEquals(List.of(), store.verifyAll());
    }
  }

  @Test
  void maxRunsPrunesEveryRunPastTheNewestAcrossChunks() throws Exception {
    int runs = StoreRetention.CHUNK_RUNS + 40;
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), KEY)) {
      append(store, 0, runs);
      RunStore.Retention ten = new RunStore.Retention(Long.MAX_VALUE, 10, 0);
      assertEquals(runs - 10, store.prune(ten, 5_000, id(runs - 1)));
      for (int i = 0; i < runs; i++) {
        assertEquals(i < runs - 10, store.pruned(id(i)).isPresent(), id(i));
      }
      assertEquals("store.max_runs", store.pruned(id(0)).orElseThrow().reason());
      assertEquals(0, store.prune(ten, 5_000, id(runs - 1)));
    }
  }

  @Test
  void maxAgePrunesEveryRunOlderThanTheBoundAcrossChunks() throws Exception {
    int runs = StoreRetention.CHUNK_RUNS + 40;
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), KEY)) {
      append(store, 0, runs);
      // Runs are stored at 1000 + i ms: older than 1 s at now = 1000 + runs + 1000 - 30 are due.
      long now = 1_000L + runs + 1_000 - 30;
      RunStore.Retention second = new RunStore.Retention(Long.MAX_VALUE, 0, 1_000);
      assertEquals(runs - 30, store.prune(second, now, id(runs - 1)));
      assertTrue(store.pruned(id(runs - 31)).isPresent());
      assertTrue(store.pruned(id(runs - 30)).isEmpty());
      assertEquals("store.max_age_ms", store.pruned(id(0)).orElseThrow().reason());
    }
  }

  /**
   * max_runs holds across checks, other bounds, new runs and a restart (the count of pruned runs
   * kept in memory is counted again), with the run just stored kept even when it is among the
   * oldest.
   */
  @Test
  void maxRunsHoldsAcrossChecksNewRunsAndARestart() throws Exception {
    Path file = tmp.resolve("runs.db");
    RunStore.Retention ten = new RunStore.Retention(Long.MAX_VALUE, 10, 0);
    try (RunStore store = RunStore.open(file, KEY)) {
      append(store, 0, 30);
      // Runs pruned by another bound first count too (stored at 1000 + i ms: 5 older than 1 s).
      assertEquals(5, store.prune(new RunStore.Retention(Long.MAX_VALUE, 0, 1_000), 2_005, id(29)));
      assertEquals(15, store.prune(ten, 5_000, id(29)));
      append(store, 30, 35);
      assertEquals(5, store.prune(ten, 5_000, id(34)));
      assertEquals(Set.of(ids(25, 35)), unpruned(store, 35));
    }
    try (RunStore store = RunStore.open(file, KEY)) {
      append(store, 35, 38);
      assertEquals(3, store.prune(ten, 5_000, id(37)));
      assertEquals(Set.of(ids(28, 38)), unpruned(store, 38));
      // A run stored with a time older than every unpruned one is the oldest: kept while it is the
      // one just stored (nothing else goes in its place), pruned at the next check.
      store.append(TestRuns.simple(KEY, "run-early", 1_000 + 27));
      assertEquals(0, store.prune(ten, 5_000, "run-early"));
      assertTrue(store.pruned("run-early").isEmpty());
      assertEquals(1, store.prune(ten, 5_000, id(37)));
      assertTrue(store.pruned("run-early").isPresent());
      assertEquals(List.of(), store.verifyAll());
    }
  }

  /** The walk reads on from its mark by the age index: it never scans runs or sorts them. */
  @Test
  void theWalkSearchesRunsByAgeFromItsMark() throws Exception {
    // Runs stored in the same millisecond are put in run_id order as the walk meets them, a few
    // at a time, not sorted all at once.
    assertSearches(
        threeRuns(),
        StoreRetention.WALK,
        "SEARCH runs USING INDEX runs_by_time (created_ms>?)",
        "USE TEMP B-TREE FOR LAST TERM OF ORDER BY");
  }

  private static String[] ids(int from, int to) {
    String[] out = new String[to - from];
    for (int i = from; i < to; i++) {
      out[i - from] = id(i);
    }
    return out;
  }

  private static Set<String> unpruned(RunStore store, int runs) {
    Set<String> out = new TreeSet<>();
    for (int i = 0; i < runs; i++) {
      if (store.pruned(id(i)).isEmpty()) {
        out.add(id(i));
      }
    }
    return out;
  }

  /**
   * A chunk is one commit: one that fails part way prunes nothing, and the walk goes back with it,
   * so the next check prunes every run the failed one would have.
   */
  @Test
  void aChunkThatFailsPrunesNothingAndTheNextCheckPrunesAllOfIt() throws Exception {
    Path file = tmp.resolve("runs.db");
    int runs = 40;
    try (RunStore store = RunStore.open(file, KEY)) {
      append(store, 0, runs);
      String refuse =
          "CREATE TRIGGER refuse BEFORE INSERT ON pruned WHEN NEW.run_id = '"
              + id(20)
              + "' BEGIN SELECT RAISE(ABORT, 'refused here'); END";
      execute(file, refuse);
      RunStore.Retention tiny = new RunStore.Retention(1, 0, 0);
      StoreException e =
          assertThrows(StoreException.class, () -> store.prune(tiny, 5_000, id(runs - 1)));
      assertTrue(e.getMessage().contains("refused here"), e.getMessage());
      for (int i = 0; i < runs; i++) {
        assertTrue(store.pruned(id(i)).isEmpty(), id(i));
      }
      execute(file, "DROP TRIGGER refuse");
      assertEquals(runs - 1, store.prune(tiny, 6_000, id(runs - 1)));
      for (int i = 0; i < runs - 1; i++) {
        assertTrue(store.pruned(id(i)).isPresent(), id(i));
      }
      assertEquals(List.of(), store.verifyAll());
    }
  }

  /**
   * Seeded runs of a few shared modules and some of their own, pruned by ever tighter bounds: after
   * each prune the store holds exactly the modules that a run not pruned names.
   */
  @Test
  void aModuleStaysWhileARunNotPrunedNamesItAndGoesWithTheLast() throws Exception {
    Path file = tmp.resolve("runs.db");
    Random random = new Random(24);
    List<byte[]> shared = List.of(new byte[] {1}, new byte[] {2}, new byte[] {3});
    int runs = 90;
    try (RunStore store = RunStore.open(file, KEY)) {
      for (int i = 0; i < runs; i++) {
        byte[] module =
            random.nextInt(5) == 0
                ? ("own " + i).getBytes(java.nio.charset.StandardCharsets.UTF_8)
                : shared.get(random.nextInt(shared.size()));
        store.append(TestRuns.record(KEY, id(i), 1_000 + i, List.of(), Map.of(), module));
      }
      assertEquals(moduleUnits(file), unprunedUnits(file));
      for (int keep : new int[] {70, 45, 44, 20, 7, 1}) {
        store.prune(new RunStore.Retention(Long.MAX_VALUE, keep, 0), 5_000, id(runs - 1));
        Set<String> held = moduleUnits(file);
        assertEquals(unprunedUnits(file), held, "keeping " + keep);
        assertTrue(held.size() <= keep, "keeping " + keep + ": " + held);
      }
      assertEquals(List.of(), store.verifyAll());
    }
  }

  /**
   * A store whose signed records alone pass max_bytes prunes every run but the one just stored, the
   * newest of each unit too, at every check: seeded runs of a few units, rounds of new runs each
   * pruned so, and a restart; after each check the store holds exactly the modules a run not pruned
   * names (a unit found wholly pruned is remembered, and only its runs stored since are read at its
   * next check).
   */
  @Test
  void modulesFollowChecksThatPruneEveryRunButTheNewest() throws Exception {
    Path file = tmp.resolve("runs.db");
    Random random = new Random(53);
    RunStore.Retention tiny = new RunStore.Retention(1, 0, 0);
    int next = 0;
    for (int start = 0; start < 2; start++) {
      try (RunStore store = RunStore.open(file, KEY)) {
        for (int round = 0; round < 6; round++) {
          for (int k = random.nextInt(9); k >= 0; k--, next++) {
            byte[] module = {(byte) random.nextInt(4)};
            store.append(TestRuns.record(KEY, id(next), 1_000 + next, List.of(), Map.of(), module));
          }
          store.prune(tiny, 5_000, id(next - 1));
          assertEquals(unprunedUnits(file), moduleUnits(file), "round " + round);
        }
        assertEquals(List.of(), store.verifyAll());
      }
    }
  }

  /**
   * What a chunk rolled back had learnt of wholly pruned units goes with it: a later check that
   * prunes only some of a unit's runs keeps its module.
   */
  @Test
  void aRolledBackChunkForgetsTheUnitsItFoundWhollyPruned() throws Exception {
    Path file = tmp.resolve("runs.db");
    byte[] a = {1};
    byte[] b = {2};
    try (RunStore store = RunStore.open(file, KEY)) {
      for (int i = 0; i < 12; i++) {
        store.append(TestRuns.record(KEY, id(i), 1_000 + i, List.of(), Map.of(), i < 5 ? a : b));
      }
      execute(
          file,
          "CREATE TRIGGER refuse BEFORE INSERT ON pruned WHEN NEW.run_id = '"
              + id(9)
              + "' BEGIN SELECT RAISE(ABORT, 'refused here'); END");
      // Runs 0-4 pruned (all of a's: its module goes), then run 9 refused: all taken back.
      assertThrows(
          StoreException.class, () -> store.prune(new RunStore.Retention(1, 0, 0), 5_000, id(11)));
      assertEquals(unprunedUnits(file), moduleUnits(file));
      execute(file, "DROP TRIGGER refuse");
      // Two of a's five runs pruned: its module stays for the other three.
      assertEquals(2, store.prune(new RunStore.Retention(Long.MAX_VALUE, 10, 0), 5_000, id(11)));
      assertEquals(unprunedUnits(file), moduleUnits(file));
      assertTrue(moduleUnits(file).contains(Blake3.hex(a)));
    }
  }

  /**
   * The module check searches the unit's runs newest first, by an index made the first time a run
   * is pruned: a store that never prunes has none to write.
   */
  @Test
  void theModuleCheckSearchesTheUnitsNewestRunsByAnIndexMadeWhenFirstNeeded() throws Exception {
    Path file = tmp.resolve("runs.db");
    String index = "SELECT count(*) FROM sqlite_master WHERE name = 'runs_by_unit'";
    try (RunStore store = RunStore.open(file, KEY)) {
      append(store, 0, 3);
      assertEquals(0, store.prune(new RunStore.Retention(Long.MAX_VALUE, 5, 0), 5_000, id(2)));
      assertEquals(Set.of("0"), set(file, index), "nothing pruned, no index");
      assertEquals(1, store.prune(new RunStore.Retention(Long.MAX_VALUE, 2, 0), 5_000, id(2)));
      assertEquals(Set.of("1"), set(file, index));
    }
    assertSearches(file, StoreRetention.UNIT_HELD, "SEARCH r USING INDEX");
    assertSearches(
        file,
        StoreRetention.UNIT_NEEDED,
        "SEARCH runs USING INDEX runs_by_unit (unit=? AND rowid>?)");
    assertReadsBackwards(file, StoreRetention.UNIT_NEEDED);
  }

  /**
   * Asserts that the query's plan names {@code search} among its steps and never scans a table,
   * sorts, gathers rows from several indexes or makes an index of its own, but in the steps {@code
   * allowed}.
   */
  private static void assertSearches(Path file, String query, String search, String... allowed)
      throws Exception {
    List<String> plan = rows(file, "EXPLAIN QUERY PLAN " + query, 4);
    assertTrue(plan.stream().anyMatch(p -> p.startsWith(search)), search + " in " + plan);
    for (String step : plan) {
      assertFalse(
          !List.of(allowed).contains(step)
              && (step.startsWith("SCAN ")
                  || step.contains("MULTI-INDEX")
                  || step.contains("TEMP B-TREE")
                  || step.contains("AUTOMATIC")),
          step + " in the plan of " + query);
    }
  }

  /** Asserts that the query reads its index backwards, from the last entry it may take. */
  private static void assertReadsBackwards(Path file, String query) throws Exception {
    List<String> ops = rows(file, "EXPLAIN " + query, 2);
    assertTrue(ops.contains("SeekLE") && ops.contains("Prev"), ops.toString());
    assertFalse(ops.contains("Next"), ops.toString());
  }

  /** A closed store of three runs, for the plans of queries on its schema. */
  private Path threeRuns() {
    Path file = tmp.resolve("runs.db");
    try (RunStore store = RunStore.open(file, KEY)) {
      append(store, 0, 3);
    }
    return file;
  }

  /**
   * Seeded runs of WASI commands that print the same greeting or their own text, read a shared
   * stdin, their own or none, and write nothing or their own text to stderr (and runs with no I/O),
   * pruned by ever tighter bounds: after each prune the store holds exactly the I/O bytes that a
   * run not pruned names, in any of its three streams.
   */
  @Test
  void ioBytesStayWhileARunNotPrunedNamesThemAndGoWithTheLast() throws Exception {
    Path file = tmp.resolve("runs.db");
    Random random = new Random(22);
    int runs = 120;
    try (RunStore store = RunStore.open(file, KEY)) {
      for (int i = 0; i < runs; i++) {
        RunRecord.Builder run =
            TestRuns.builder(
                KEY,
                id(i),
                1_000 + i,
                List.of(),
                Map.of(),
                new byte[] {(byte) random.nextInt(3)},
                "\"Completed\"",
                TestRuns.grantsOf(id(i)));
        if (random.nextInt(6) > 0) {
          run.io(
              new RunIo(
                  List.of("cmd"),
                  stdin(pick(random, new String[] {null, "shared in", "in " + i})),
                  output(pick(random, new String[] {"hello", "hello", "", "out " + i})),
                  output(pick(random, new String[] {"", "", "hello", "err " + i})),
                  0,
                  true));
        }
        store.append(run.build());
      }
      assertEquals(ioNamed(file, false), set(file, "SELECT address FROM io_blobs"));
      for (int keep : new int[] {100, 80, 79, 50, 20, 6, 1}) {
        store.prune(new RunStore.Retention(Long.MAX_VALUE, keep, 0), 5_000, id(runs - 1));
        assertEquals(
            ioNamed(file, true), set(file, "SELECT address FROM io_blobs"), "keeping " + keep);
      }
      assertEquals(List.of(), store.verifyAll());
    }
  }

  /**
   * Whether a run not pruned still names I/O bytes is looked up one stream at a time, newest first
   * by that stream's index; over the three at once it gathered every run naming the bytes, from all
   * three indexes, for each run pruned.
   */
  @Test
  void theIoCheckSearchesEachStreamsNewestRunsByItsIndex() throws Exception {
    Path file = threeRuns();
    for (String stream : List.of("stdin", "stdout", "stderr")) {
      String q = StoreRetention.ioNeeded(stream);
      assertSearches(file, q, "SEARCH run_io USING INDEX run_io_" + stream + " (" + stream + "=?)");
      assertReadsBackwards(file, q);
    }
  }

  private static <T> T pick(Random random, T[] choices) {
    return choices[random.nextInt(choices.length)];
  }

  private static Optional<byte[]> stdin(String text) {
    return Optional.ofNullable(text).map(t -> t.getBytes(StandardCharsets.UTF_8));
  }

  private static ExecutionResult.Output output(String text) {
    byte[] b = text.getBytes(StandardCharsets.UTF_8);
    return new ExecutionResult.Output(b, b.length, true);
  }

  /** The I/O addresses that runs name (only those not pruned, if {@code unprunedOnly}). */
  private static Set<String> ioNamed(Path file, boolean unprunedOnly) throws Exception {
    String runs =
        unprunedOnly
            ? "FROM run_io WHERE run_id NOT IN (SELECT run_id FROM pruned)"
            : "FROM run_io";
    return set(
        file,
        "SELECT stdin a "
            + runs
            + " UNION SELECT stdout "
            + runs
            + " UNION SELECT stderr "
            + runs
            + " EXCEPT SELECT NULL");
  }

  private static List<String> column(Statement st, String query, int column) throws Exception {
    List<String> out = new ArrayList<>();
    try (ResultSet rs = st.executeQuery(query)) {
      while (rs.next()) {
        out.add(rs.getString(column));
      }
    }
    return out;
  }

  /** Runs a statement on the store's file beside the store (a trigger that refuses a row). */
  private static void execute(Path file, String statement) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
        Statement st = c.createStatement()) {
      st.execute(statement);
    }
  }

  private static Set<String> moduleUnits(Path file) throws Exception {
    return set(file, "SELECT address FROM modules");
  }

  private static Set<String> unprunedUnits(Path file) throws Exception {
    return set(file, "SELECT unit FROM runs WHERE run_id NOT IN (SELECT run_id FROM pruned)");
  }

  private static Set<String> set(Path file, String query) throws Exception {
    return new TreeSet<>(rows(file, query, 1));
  }

  /** Column {@code column} of each row the query answers on the store's file. */
  private static List<String> rows(Path file, String query, int column) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
        Statement st = c.createStatement()) {
      return column(st, query, column);
    }
  }
}
