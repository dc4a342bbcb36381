package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.SigningKey;
import java.sql.Connection;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The background seal's check of runs this process stored (StoreAudit.Depth.SIGNED_HERE): records
 * it signed are not read as JSON again, so a change to any stored byte must still be found, and
 * named in the words of the full check, which examines every run the quick check is not sure of.
 */
class SignedHereCheckTest extends StoreFileFixture {
  private static final int RUNS = 60;

  private List<StoreDamage> check(RunStore store, StoreAudit.Depth depth) throws Exception {
    try (Connection db = store.openReader();
        Statements q = new Statements(db)) {
      return StoreAudit.slice(
              q,
              key.publicKey(),
              StoreAudit.Start.GENESIS,
              Long.MAX_VALUE,
              Long.MAX_VALUE,
              p -> {},
              null,
              depth)
          .damage();
    }
  }

  /** Changes the file behind the store's back, reading and writing records as text. */
  private void edit(String statement) throws Exception {
    try (Connection c = raw();
        Statement st = c.createStatement()) {
      StoreEncoding.addSqlFunctions(c);
      assertEquals(1, st.executeUpdate(statement), statement);
    }
  }

  @Test
  void aCleanStoreIsCleanAtEitherDepth() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fill(store, 0, RUNS);
      assertEquals(List.of(), check(store, StoreAudit.Depth.FULL));
      assertEquals(List.of(), check(store, StoreAudit.Depth.SIGNED_HERE));
    }
  }

  @Test
  void everyStoredByteChangedIsFoundAndNamedAsTheFullCheckNamesIt() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fill(store, 0, RUNS);
    }
    String text = "record_text(envelope)";
    String zeros = "0".repeat(64);
    Map<String, String> edits =
        Map.ofEntries(
            // A signed value changed (and the record re-encoded, so it still decodes).
            Map.entry(
                "run-00003",
                "UPDATE run_records SET envelope = record_bytes(replace("
                    + text
                    + ", '\"tier\":\"S2\"', '\"tier\":\"S3\"'))"
                    + " WHERE run_id = 'run-00003' AND kind = 'receipt'"),
            // The signature's last hex digit changed: the same core, so the same address.
            Map.entry(
                "run-00007",
                "UPDATE run_records SET envelope = record_bytes(substr("
                    + text
                    + ", 1, length("
                    + text
                    + ") - 3) || CASE substr("
                    + text
                    + ", length("
                    + text
                    + ") - 2, 1) WHEN '0' THEN '1' ELSE '0' END || '\"}')"
                    + " WHERE run_id = 'run-00007' AND kind = 'attestation'"),
            Map.entry(
                "run-00011",
                "UPDATE run_records SET address = '"
                    + zeros
                    + "' WHERE run_id = 'run-00011' AND kind = 'segment'"),
            Map.entry(
                "run-00015",
                "DELETE FROM run_records WHERE run_id = 'run-00015' AND kind = 'receipt'"),
            // Another run's record (signed here, valid) in place of the run's own.
            Map.entry(
                "run-00019",
                "UPDATE run_records SET"
                    + " envelope = (SELECT envelope FROM run_records"
                    + " WHERE run_id = 'run-00001' AND kind = 'attestation'),"
                    + " address = (SELECT address FROM run_records"
                    + " WHERE run_id = 'run-00001' AND kind = 'attestation')"
                    + " WHERE run_id = 'run-00019' AND kind = 'attestation'"),
            // The run's own record twice (its segment, again in place of its receipt).
            Map.entry(
                "run-00023",
                "UPDATE run_records SET (address, kind, seq, envelope) = (SELECT address, kind,"
                    + " seq + 1, envelope FROM run_records WHERE run_id = 'run-00023'"
                    + " AND kind = 'segment') WHERE run_id = 'run-00023' AND kind = 'receipt'"),
            Map.entry(
                "run-00027",
                "UPDATE journal SET entry = '{\"n\":3}' WHERE run_id = 'run-00027' AND seq = 1"),
            Map.entry("run-00031", "DELETE FROM journal WHERE run_id = 'run-00031' AND seq = 0"),
            Map.entry("run-00035", "UPDATE runs SET log = 'all good' WHERE run_id = 'run-00035'"),
            // Another key in the envelope: the same core and address, not this signer's.
            Map.entry(
                "run-00039",
                "UPDATE run_records SET envelope = record_bytes(replace("
                    + text
                    + ", '\"public_key\":\""
                    + key.publicKey().hex()
                    + "', '\"public_key\":\""
                    + SigningKey.generate().publicKey().hex()
                    + "'))"
                    + " WHERE run_id = 'run-00039' AND kind = 'receipt'"));
    for (String statement : edits.values()) {
      edit(statement);
    }
    // A record kept in another stored form (its plain text, as before store schema 17) is no
    // damage: the quick check does not know that form and leaves the run to the full check.
    edit(
        "UPDATE run_records SET envelope = CAST("
            + text
            + " AS BLOB) WHERE run_id = 'run-00043' AND kind = 'receipt'");
    try (RunStore store = RunStore.open(file(), key)) {
      List<StoreDamage> full = check(store, StoreAudit.Depth.FULL);
      List<StoreDamage> quick = check(store, StoreAudit.Depth.SIGNED_HERE);
      assertEquals(full, quick);
      assertEquals(
          edits.keySet().stream().sorted().toList(),
          quick.stream().map(StoreDamage::runId).toList(),
          quick.toString());
    }
  }

  @Test
  void whatThisProcessSignedIsTakenAsItWroteItAndTheFullCheckStillExaminesIt() throws Exception {
    // Records this process signed that do not agree with each other (a writer's bug: the
    // attestation of one run stored under another): the quick check takes them as written, which
    // is its trade; the full check (start-up after a restart, `store verify`) names the fault.
    // One journal for both, so that the foreign attestation's journal root is the run's own.
    List<String> journal = List.of("{\"n\":1}");
    byte[] module = "module".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    RunRecord a = TestRuns.record(key, "run-a", 1_000, journal, Map.of(), module);
    RunRecord b = TestRuns.record(key, "run-b", 1_001, journal, Map.of(), module);
    RunRecord mixed =
        RunRecord.builder()
            .run(a.runId(), a.createdMs())
            .unit(a.unit(), a.grantsId())
            .outcomeJson(a.outcomeJson())
            .signed(a.receipt(), b.attestation(), a.segment())
            .journal(a.journalEntries(), a.blobs())
            .log(a.log())
            .submission(a.module(), a.grantsJson(), a.entry())
            .build();
    try (RunStore store = RunStore.open(file(), key)) {
      store.appendAll(List.of(mixed));
      assertEquals(List.of(), check(store, StoreAudit.Depth.SIGNED_HERE));
      List<StoreDamage> full = check(store, StoreAudit.Depth.FULL);
      assertEquals(1, full.size(), full.toString());
      assertEquals("run-a", full.get(0).runId());
    }
  }

  @Test
  void aJournalIsCheckedByItsStoredBytesAndAnEntryThatIsNotCanonicalIsStillReadAsBefore()
      throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fill(store, 0, 12);
    }
    // The same entries in another spelling (space, keys reordered): the stored bytes no longer
    // hash to the attested root, but each entry canonicalizes to its attested leaf, which the
    // check has always accepted; it reads the entries as JSON to find that.
    edit(
        "UPDATE journal SET entry = '{ \"run\": \"run-00002\", \"n\": 1 }'"
            + " WHERE run_id = 'run-00002' AND seq = 0");
    edit("UPDATE journal SET entry = '{\"n\":2} ' WHERE run_id = 'run-00004' AND seq = 1");
    // Two runs' journals swapped entry for entry: every entry reads, none is in its place.
    edit("UPDATE journal SET seq = 5 WHERE run_id = 'run-00006' AND seq = 0");
    edit("UPDATE journal SET seq = 0 WHERE run_id = 'run-00006' AND seq = 1");
    edit("UPDATE journal SET seq = 1 WHERE run_id = 'run-00006' AND seq = 5");
    // Entries that SQLite takes for JSON (an index reads them) but the check does not read: a key
    // twice, a lone surrogate.
    edit("UPDATE journal SET entry = '{\"n\":2,\"n\":2}' WHERE run_id = 'run-00008' AND seq = 1");
    edit("UPDATE journal SET entry = '{\"n\":\"\\ud800\"}' WHERE run_id = 'run-00010' AND seq = 0");
    try (RunStore store = RunStore.open(file(), key)) {
      for (StoreAudit.Depth depth : StoreAudit.Depth.values()) {
        List<StoreDamage> found = check(store, depth);
        assertEquals(
            List.of("run-00006", "run-00008", "run-00010"),
            found.stream().map(StoreDamage::runId).toList(),
            depth + ": " + found);
        assertTrue(
            found.stream().allMatch(d -> d.column().equals("journal")), depth + ": " + found);
        assertTrue(found.get(0).reason().contains("is not the attested"), found.toString());
        assertTrue(found.get(1).reason().startsWith("entry 1: "), found.toString());
        assertTrue(found.get(2).reason().startsWith("entry 0: "), found.toString());
      }
    }
  }
}
