package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Verification;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * A run's records in either layout (schema 23): every read finds them by key or by range, never by
 * a scan, and a store holding both reads, verifies and finds damage in both alike.
 */
class RecordRowsTest extends StoreFileFixture {
  /** Every query that reads records, with what it must never do in its plan. */
  @Test
  void everyReadOfRecordsFindsThemByKeyOrRangeNotByAScan() throws Exception {
    fillInBothLayouts(40, "run-00020");
    List<String> queries =
        List.of(
            RunReads.RecordRow.OF_RUN,
            RunTable.RECORDS_OF_KIND,
            RunReads.Chunk.RECORDS,
            LedgerReceipts.RECEIPTS,
            "SELECT " + StoreAudit.ROW_COLUMNS + " FROM runs r WHERE r.run_id = ?");
    try (Connection c = raw();
        Statement st = c.createStatement()) {
      for (String q : queries) {
        List<String> plan = new ArrayList<>();
        try (ResultSet rs = st.executeQuery("EXPLAIN QUERY PLAN " + q)) {
          while (rs.next()) {
            plan.add(rs.getString(4));
          }
        }
        assertFalse(plan.isEmpty(), q);
        for (String step : plan) {
          // A co-routine's own rows are read as they come; a table is only ever searched.
          boolean scan = step.startsWith("SCAN ") && !step.startsWith("SCAN (subquery");
          assertFalse(scan || step.contains("AUTOMATIC"), step + " in the plan of " + q);
        }
        assertTrue(
            plan.stream().anyMatch(p -> p.contains("INTEGER PRIMARY KEY")),
            "run_records read by its range in " + q + ": " + plan);
      }
    }
  }

  @Test
  void runsStoredBeforeAndAfterAreReadAndVerifiedAlike() throws Exception {
    fillInBothLayouts(20, "run-00010");
    try (RunStore s = RunStore.open(file(), key)) {
      fill(s, 20, 5);
      assertEquals(List.of(), s.verifyAll());
      for (String run : List.of("run-00003", "run-00015", "run-00022")) {
        for (RecordKind kind :
            List.of(RecordKind.SEGMENT, RecordKind.RECEIPT, RecordKind.ATTESTATION)) {
          var records = s.records(run, kind);
          assertEquals(1, records.size(), run + " " + kind);
          assertTrue(
              records.get(0).verify(Optional.of(key.publicKey())) instanceof Verification.Valid,
              run + " " + kind);
        }
      }
      List<RunStore.FleetLeaf> leaves = s.fleetLeaves(0, 24, 100);
      assertEquals(25, leaves.size());
      for (int i = 0; i < 25; i++) {
        assertEquals(i, leaves.get(i).position());
        assertEquals(String.format("run-%05d", i), leaves.get(i).runId());
      }
      assertEquals(5, s.fleetLeaves(8, 12, 100).size(), "a range across both layouts");
    }
    // Damage in either table, and a range edited to take in the next run's rows, is found.
    sql("DELETE FROM records WHERE run_id = 'run-00004' AND kind = 'receipt'");
    sql("DELETE FROM run_records WHERE run_id = 'run-00021' AND kind = 'receipt'");
    sql(
        "UPDATE runs SET records_at = (SELECT records_at FROM runs WHERE run_id = 'run-00023')"
            + " WHERE run_id = 'run-00022'");
    try (RunStore s = RunStore.open(file(), key)) {
      Set<String> damaged = new TreeSet<>();
      s.verifyAll().forEach(d -> damaged.add(d.runId()));
      assertEquals(Set.of("run-00004", "run-00021", "run-00022"), damaged);
    }
  }

  /**
   * {@code records_n} is written for the daemons of schema 23 that read by it and read by none now:
   * edited to anything, every read and the audit answer as before.
   */
  @Test
  void aRunsRecordCountEditedChangesNoRead() throws Exception {
    List<String> before;
    try (RunStore s = RunStore.open(file(), key)) {
      fill(s, 0, 6);
      before = addresses(s);
    }
    sql("UPDATE runs SET records_n = 0 WHERE run_id = 'run-00001'");
    sql("UPDATE runs SET records_n = NULL WHERE run_id = 'run-00002'");
    sql("UPDATE runs SET records_n = 1000000000 WHERE run_id = 'run-00003'");
    try (RunStore s = RunStore.open(file(), key)) {
      assertEquals(List.of(), s.verifyAll());
      assertEquals(before, addresses(s));
      assertEquals(18, before.size());
      assertEquals(6, s.fleetLeaves(0, 5, 100).size());
    }
  }

  /** Each of the six runs' records by kind, one address each (or what a read found instead). */
  private static List<String> addresses(RunStore s) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      String run = String.format("run-%05d", i);
      for (RecordKind kind :
          List.of(RecordKind.SEGMENT, RecordKind.RECEIPT, RecordKind.ATTESTATION)) {
        var records = s.records(run, kind);
        out.add(records.size() == 1 ? records.get(0).address() : run + " " + kind + " " + records);
      }
    }
    return out;
  }

  /** A run's records take the ids after the last stored, a rolled-back run's included. */
  @Test
  void eachRunsRecordsTakeConsecutiveIdsAfterTheLastStored() throws Exception {
    try (RunStore s = RunStore.open(file(), key)) {
      fill(s, 0, 2);
      RunRecord bad =
          TestRuns.builder(
                  key,
                  "run-bad",
                  5,
                  List.of(),
                  java.util.Map.of(),
                  new byte[] {1},
                  "\"Trapped\"",
                  TestRuns.grantsOf("run-bad"))
              .build();
      org.junit.jupiter.api.Assertions.assertThrows(StoreException.class, () -> s.append(bad));
      fill(s, 2, 2);
      assertEquals(List.of(), s.verifyAll());
    }
    try (Connection c = raw();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT u.run_id, u.records_at, group_concat(x.id || ':' || x.kind, ' ' ORDER BY x.id)"
                    + " FROM runs u JOIN run_records x ON x.run_id = u.run_id"
                    + " GROUP BY u.run_id ORDER BY u.records_at")) {
      long next = 1;
      int runs = 0;
      while (rs.next()) {
        long at = rs.getLong(2);
        assertEquals(next, at, rs.getString(1));
        assertEquals(
            at + ":segment " + (at + 1) + ":receipt " + (at + 2) + ":attestation",
            rs.getString(3),
            rs.getString(1));
        next = at + RecordRows.PER_RUN;
        runs++;
      }
      assertEquals(4, runs);
    }
  }
}
