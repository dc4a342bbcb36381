package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 9 item 7 against the running daemon: a run store at schema version 1 (runs and records, no
 * signed ledger) is verified and signed at start and then served; a tampered version-1 run stops
 * the upgrade naming the run; a store from a newer sandboxd is refused.
 */
class StoreUpgradeTest {
  @TempDir static Path dir;

  /** A stopped daemon's state: a Completed hello run and a Terminated spin run. */
  static Path pristine;

  static SubmitReply hello;
  static SubmitReply spin;

  @BeforeAll
  static void recordRuns() throws Exception {
    pristine = dir.resolve("pristine");
    List<SubmitReply> runs =
        StoppedState.record(pristine, dir.resolve("p/sandboxd.sock"), "hello", "spin");
    hello = runs.get(0);
    spin = runs.get(1);
  }

  /** A copy of the pristine state with its store taken back to schema version 1. */
  static Path versionOneCopy(String name) throws Exception {
    Path target = StoppedState.copy(pristine, dir.resolve(name));
    exec(
        target,
        // Rows as version 1 kept them: records as text in records (schema 23 moved them), each
        // run's grants text in its row.
        "INSERT INTO records (address, run_id, kind, seq, envelope)"
            + " SELECT address, run_id, kind, seq, record_text(envelope) FROM run_records"
            + " ORDER BY id",
        "DROP TABLE run_records",
        "ALTER TABLE runs DROP COLUMN records_at",
        "ALTER TABLE runs DROP COLUMN records_n",
        "UPDATE runs SET grants = (SELECT g.text FROM grants_texts g"
            + " WHERE g.address = runs.grants_id) WHERE grants = '@'",
        "DROP TABLE grants_texts",
        "DROP TABLE ledger",
        "DROP TABLE store_head",
        "DROP TABLE store_checkpoint",
        "DROP INDEX journal_by_response",
        "DROP TABLE pruned",
        "PRAGMA user_version = 0");
    return target;
  }

  static void exec(Path state, String... statements) throws Exception {
    try (Connection c = StoppedState.store(state);
        Statement st = c.createStatement()) {
      for (String s : statements) {
        st.execute(s);
      }
    }
  }

  static long userVersion(Path state) throws Exception {
    return Long.parseLong(StoppedState.rows(state, "PRAGMA user_version").get(0).get(0));
  }

  @Test
  void aVersionOneStoreIsUpgradedAndServed() throws Exception {
    Path state = versionOneCopy("v1");
    try (DaemonProcess d = DaemonProcess.start(state, dir.resolve("v1.sock"))) {
      String list = StoppedState.verifiedRunsList(d, 2);
      assertTrue(list.contains(hello.getRunId()), list);
      assertTrue(list.contains(spin.getRunId()), list);
      DaemonProcess.Result show = d.ctl("runs", "show", spin.getRunId());
      assertEquals(0, show.exit(), show.err());
      assertTrue(show.out().contains("Terminated"), show.out());
    }
    // Upgraded to the version a new store is created at.
    assertEquals(userVersion(pristine), userVersion(state));
  }

  @Test
  void aTamperedVersionOneRunStopsTheUpgradeNamingIt() throws Exception {
    Path state = versionOneCopy("v1-tampered");
    exec(
        state,
        "UPDATE runs SET outcome = '\"Completed\"' WHERE run_id = '" + spin.getRunId() + "'");
    String said = DaemonProcess.refusedStart(state);
    assertTrue(said.contains("cannot upgrade from schema version 1 to 2"), said);
    assertTrue(said.contains("run " + spin.getRunId() + ", outcome:"), said);
    assertEquals(0, userVersion(state));
  }

  @Test
  void aStoreFromANewerSandboxdIsRefused() throws Exception {
    Path state = versionOneCopy("v99");
    exec(state, "PRAGMA user_version = 99");
    String said = DaemonProcess.refusedStart(state);
    assertTrue(said.contains("schema version 99 was written by a newer sandboxd"), said);
    assertEquals(99, userVersion(state));
  }
}
