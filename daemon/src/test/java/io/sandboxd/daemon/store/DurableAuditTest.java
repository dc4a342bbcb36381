package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.store.DurableRunTable.Change;
import io.sandboxd.daemon.store.DurableRunTable.State;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A durable run's row is on disk before its first segment is stored (its start is answered only
 * then), so a store holding a run still in its first segment, or one that failed before storing
 * one, is the node's own and verifies; a row in any other state with no segment was put there
 * behind the node's back and is found.
 */
class DurableAuditTest {
  @TempDir Path tmp;

  private final SigningKey key = SigningKey.generate();

  private static final String FAILED = "{\"Failed\":{\"reason\":\"supervisor: test\"}}";

  @Test
  void aRunWithNoSegmentYetVerifiesWhileRunningOnceFailedAndAfterAStoppedDaemon() {
    Path db = tmp.resolve("runs.db");
    try (RunStore store = RunStore.open(db, key)) {
      store.append(TestRuns.simple(key, "run-0", 0));
      assertTrue(store.durable().insert(row("first-segment"), new byte[8], List.of(), List.of()));
      assertTrue(store.durable().insert(row("fails"), new byte[8], List.of(), List.of()));
      assertTrue(store.durable().insert(row("interrupted"), new byte[8], List.of(), List.of()));
      assertEquals(List.of(), store.verifyAll(), "runs in their first segment");

      // The supervisor's failure before any segment (DurableRuns.launch).
      store
          .durable()
          .apply(new Change("fails", List.of(), List.of(), State.failed, FAILED, Optional.empty()));
      assertEquals(List.of(), store.verifyAll(), "a run failed before storing a segment");
    }
    // A daemon stopped while two runs were in their first segment: the next start settles them.
    try (RunStore reopened = RunStore.open(db, key)) {
      assertEquals(List.of(), reopened.verifyFromCheckpoint().damage());
      List<String> settled =
          reopened.durable().settleInterrupted("{\"Failed\":{\"reason\":\"the daemon stopped\"}}");
      assertEquals(List.of("first-segment", "interrupted"), settled.stream().sorted().toList());
      assertEquals(List.of(), reopened.verifyAll());
    }
    try (RunStore again = RunStore.open(db, key)) {
      assertEquals(List.of(), again.verifyFromCheckpoint().damage());
      assertEquals(List.of(), again.verifyAll());
    }
  }

  @Test
  void aRowWithNoSegmentInAStateThatClaimsSignedRecordsIsFound() throws Exception {
    Path db = tmp.resolve("runs.db");
    try (RunStore store = RunStore.open(db, key)) {
      store.append(TestRuns.simple(key, "run-0", 0));
      assertTrue(store.durable().insert(row("honest"), new byte[8], List.of(), List.of()));
    }
    List<State> claiming =
        List.of(State.parked, State.exporting, State.moved, State.completed, State.terminated);
    // Inserted behind the node's back: rows that say the run parked, moved or ended.
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
        PreparedStatement st =
            c.prepareStatement(
                "INSERT INTO durable_runs (run_id, state, created_ms, updated_ms, unit, module,"
                    + " grants, grants_id, entry, env, outcome, exported, imported)"
                    + " SELECT ?, ?, created_ms, updated_ms, unit, module, grants, grants_id,"
                    + " entry, env, ?, exported, imported FROM durable_runs"
                    + " WHERE run_id = 'honest'")) {
      for (State s : claiming) {
        st.setString(1, "forged-" + s);
        st.setString(2, s.name());
        st.setString(3, "{\"Completed\":{}}");
        assertEquals(1, st.executeUpdate());
      }
    }
    try (RunStore reopened = RunStore.open(db, key)) {
      List<StoreDamage> damage = reopened.verifyAll();
      assertEquals(claiming.size(), damage.size(), damage.toString());
      for (State s : claiming) {
        StoreDamage d =
            damage.stream().filter(x -> x.runId().equals("forged-" + s)).findFirst().orElseThrow();
        assertEquals("durable_runs", d.column(), d.toString());
        assertTrue(
            d.reason().contains("is " + s + " but not in the signed store head"), d.toString());
      }
    }
  }

  private static DurableRunTable.Run row(String id) {
    return new DurableRunTable.Run(
        id, State.running, 1, 1, "b3:unit", "{}", "grants", "step", "", "", false, false);
  }
}
