package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Start-up checks the runs after the sealed checkpoint on several threads (issue 22): every run
 * exactly once, and on a damaged store the same damage in the same order as on one thread, so that
 * start-up refuses it with the same words.
 */
class ParallelStartupCheckTest extends StoreFileFixture {
  @Test
  void everyRunAfterTheCheckpointIsCheckedOnceInLedgerOrderOnSeveralThreads() throws Exception {
    int sealed = 30;
    // More than one batch, and not a multiple of it: the last batch is a partial one.
    int after = ParallelRunCheck.BATCH * 2 + 37;
    try (RunStore store = RunStore.open(file(), key)) {
      fill(store, 0, sealed);
      assertEquals(List.of(), store.verifyFromCheckpoint(1).damage());
      fill(store, sealed, after);
      List<Long> positions = new ArrayList<>();
      StoreAudit.Result r;
      try (Connection db = store.openReader();
          ParallelRunCheck parallel = new ParallelRunCheck(key.publicKey(), 4, store::openReader)) {
        r =
            StoreAudit.audit(
                db,
                key.publicKey(),
                new StoreAudit.Start(sealed, store.checkpoint().orElseThrow().chain()),
                positions::add,
                parallel);
        assertTrue(
            parallel.threadsUsed() >= 2, "threads that checked runs: " + parallel.threadsUsed());
      }
      assertEquals(List.of(), r.damage());
      assertEquals(after, r.checked());
      List<Long> expected = new ArrayList<>();
      for (long p = sealed; p < sealed + after; p++) {
        expected.add(p);
      }
      assertEquals(expected, positions, "each run once, reported in ledger order");

      RunStore.StartupCheck check = store.verifyFromCheckpoint(4);
      assertEquals(List.of(), check.damage());
      assertEquals(sealed, check.checkpointRuns());
      assertEquals(after, check.verifiedRuns());
      // A clean parallel check seals, at the chain the one-thread audit would have computed.
      assertEquals(sealed + after, store.checkpoint().orElseThrow().runs());
      assertEquals(r.chain(), store.checkpoint().orElseThrow().chain());
    }
  }

  @Test
  void aDamagedStoreGetsTheSameVerdictInTheSameOrderOnOneThreadAndOnSeveral() throws Exception {
    int sealed = 10;
    int after = 300;
    try (RunStore store = RunStore.open(file(), key)) {
      fill(store, 0, sealed);
      assertEquals(List.of(), store.verifyFromCheckpoint().damage());
      fill(store, sealed, after);
    }
    // Damage of every kind a run's own check finds, spread over the batch so that the workers'
    // finishing order differs from the ledger's.
    sql("UPDATE runs SET log = 'rewritten' WHERE run_id = 'run-00290'");
    sql("UPDATE runs SET outcome = '{\"Failed\":{\"reason\":\"x\"}}' WHERE run_id = 'run-00011'");
    sql("DELETE FROM journal WHERE run_id = 'run-00150' AND seq = 1");
    sql("DELETE FROM run_records WHERE run_id = 'run-00077' AND kind = 'segment'");
    sql("DELETE FROM runs WHERE run_id = 'run-00201'");
    sql("UPDATE journal SET entry = '{\"n\":3}' WHERE run_id = 'run-00012' AND seq = 1");
    try (RunStore store = RunStore.open(file(), key)) {
      RunStore.StartupCheck one = store.verifyFromCheckpoint(1);
      for (int cores : new int[] {2, 4, 7}) {
        RunStore.StartupCheck many = store.verifyFromCheckpoint(cores);
        assertEquals(one.damage(), many.damage(), cores + " threads");
        assertEquals(one.verifiedRuns(), many.verifiedRuns(), cores + " threads");
      }
      List<String> ids = one.damage().stream().map(StoreDamage::runId).toList();
      // The head's count (a run row deleted) comes first, then each damaged run in ledger order.
      assertEquals(
          List.of(
              StoreDamage.STORE,
              "run-00011",
              "run-00012",
              "run-00077",
              "run-00150",
              "run-00201",
              "run-00290"),
          ids,
          one.damage().toString());
      assertEquals(after, one.verifiedRuns());
      // A damaged check seals nothing, on any number of threads.
      assertEquals(sealed, store.checkpoint().orElseThrow().runs());
      assertTrue(store.run("run-00290").orElseThrow().tampered().isPresent());
    }
  }
}
