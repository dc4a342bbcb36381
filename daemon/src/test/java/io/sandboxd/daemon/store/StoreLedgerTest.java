package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.StoreHead;
import io.sandboxd.attest.StoredRun;
import io.sandboxd.attest.Verification;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * The ledger chains each run's store record and signs one head per commit: the head covers every
 * record through the chain, so an edit no signature of its own would catch is still found.
 */
class StoreLedgerTest extends StoreFileFixture {

  private String headText() throws Exception {
    try (Connection c = raw();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT envelope FROM store_head WHERE id = 1")) {
      assertTrue(rs.next());
      return rs.getString(1);
    }
  }

  /** Replaces the stored text of the ledger row at {@code position}, behind the store's back. */
  private void rewriteLedgerRow(int position, String envelope) throws Exception {
    try (Connection c = raw();
        PreparedStatement st =
            c.prepareStatement("UPDATE ledger SET envelope = ? WHERE position = ?")) {
      st.setString(1, envelope);
      st.setInt(2, position);
      assertEquals(1, st.executeUpdate());
    }
  }

  private List<String> ledgerRows() throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = raw();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT envelope FROM ledger ORDER BY position")) {
      while (rs.next()) {
        out.add(StoreEncoding.decode(rs.getBytes(1)));
      }
    }
    return out;
  }

  @Test
  void oneSignedHeadCoversEveryChainedRecordOfABatch() throws Exception {
    List<RunRecord> batch = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      batch.add(TestRuns.simple(key, "run-" + i, 100 + i));
    }
    try (RunStore s = RunStore.open(file(), key)) {
      s.appendAll(batch);
    }
    String chain = StoreHead.EMPTY_CHAIN;
    for (String row : ledgerRows()) {
      // Bare canonical cores, no signature of their own.
      assertEquals(row, CanonicalJson.canonicalString(CanonicalJson.parse(row)));
      StoreLedger.Row r = StoreLedger.read(row);
      assertTrue(r.signed().isEmpty(), row);
      chain = StoreHead.extend(chain, r.address());
    }
    Envelope head = Envelope.fromJson(CanonicalJson.parse(headText()));
    assertTrue(head.verify(Optional.of(key.publicKey())).isValid());
    StoreHead h = StoreHead.fromCore(head.core());
    assertEquals(20, h.runs());
    assertEquals(chain, h.chain(), "the signed head's chain is the chain over the cores");
    try (RunStore s = RunStore.open(file(), key)) {
      assertEquals(List.of(), s.verifyAll());
    }
  }

  @Test
  void concurrentAppendsShareHeadSignaturesAndAllVerify() throws Exception {
    int threads = 8;
    int each = 25;
    try (RunStore s = RunStore.open(file(), key)) {
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int tt = t;
        done.add(
            pool.submit(
                () -> {
                  for (int i = 0; i < each; i++) {
                    s.append(TestRuns.simple(key, "run-" + tt + "-" + i, 1000L * tt + i));
                  }
                }));
      }
      for (Future<?> f : done) {
        f.get();
      }
      pool.shutdown();
      RunStore.CommitStats stats = s.commitStats();
      assertEquals(threads * each, stats.runs());
      assertEquals(threads * each, s.headRuns());
      assertEquals(List.of(), s.verifyAll());
    }
    // A restart continues the chain from the signed head, not from scratch.
    try (RunStore s = RunStore.open(file(), key)) {
      s.append(TestRuns.simple(key, "after-restart", 1));
      assertEquals(threads * each + 1, s.headRuns());
      assertEquals(List.of(), s.verifyAll());
    }
  }

  @Test
  void aRowAndItsChainedRecordEditedTogetherBreakTheSignedChain() throws Exception {
    try (RunStore s = RunStore.open(file(), key)) {
      for (int i = 0; i < 5; i++) {
        s.append(TestRuns.simple(key, "run-" + i, 10 + i));
      }
    }
    // Rewrite run-2's created_ms in its row and in its store record, consistently: no per-run
    // signature is there to break, so only the chain under the signed head can tell.
    String row = ledgerRows().get(2);
    StoredRun was = StoreLedger.read(row).stored();
    StoredRun forged =
        new StoredRun(
            was.position(),
            was.runId(),
            was.createdMs() + 1,
            was.unit(),
            was.grantsId(),
            was.outcome(),
            was.entry(),
            was.grants(),
            was.log(),
            was.logBytes(),
            was.segment(),
            was.receipt(),
            was.attestation());
    rewriteLedgerRow(2, CanonicalJson.canonicalString(forged.toCore()));
    try (Connection c = raw();
        Statement st = c.createStatement()) {
      assertEquals(
          1, st.executeUpdate("UPDATE runs SET created_ms = created_ms + 1 WHERE run_id='run-2'"));
    }
    try (RunStore s = RunStore.open(file(), key)) {
      // The row agrees with its (forged) record, so a read alone cannot tell ...
      assertTrue(s.run("run-2").orElseThrow().tampered().isEmpty());
      // ... but the chain no longer matches the signed head, which start-up checks.
      List<StoreDamage> found = s.verifyAll();
      assertTrue(
          found.stream().anyMatch(d -> d.column().equals("ledger") && d.reason().contains("chain")),
          found.toString());
    }
  }

  @Test
  void aLedgerRowSignedOnItsOwnStillReadsAndVerifies() throws Exception {
    try (RunStore s = RunStore.open(file(), key)) {
      s.append(TestRuns.simple(key, "run-0", 10));
    }
    // A store written before per-batch heads holds signed envelopes; same address, same chain.
    String row = ledgerRows().get(0);
    StoreLedger.Row chained = StoreLedger.read(row);
    Envelope signed = Envelope.sign(chained.core(), key);
    assertEquals(chained.address(), signed.address());
    rewriteLedgerRow(0, signed.toJsonLine());
    try (RunStore s = RunStore.open(file(), key)) {
      assertEquals(List.of(), s.verifyAll());
      assertTrue(s.run("run-0").orElseThrow().tampered().isEmpty());
    }
    // Signed by another key, it is damage.
    Envelope foreign = Envelope.sign(chained.core(), SigningKey.generate());
    assertTrue(foreign.verify(Optional.of(key.publicKey())) instanceof Verification.Invalid);
    rewriteLedgerRow(0, foreign.toJsonLine());
    try (RunStore s = RunStore.open(file(), key)) {
      assertTrue(s.run("run-0").orElseThrow().tampered().isPresent());
    }
  }

  @Test
  void aHeadSignedInATransactionRolledBackIsNeverOfferedAsABound() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      // The store's tables, then a ledger of its own on a second connection.
    }
    String zeros = "0".repeat(64);
    try (Connection c = raw()) {
      c.setAutoCommit(false);
      StoreLedger ledger = StoreLedger.open(c, new Statements(c));
      for (int round = 0; round < 3; round++) {
        StoreLedger.Mark before = ledger.mark();
        for (int i = 0; i < StoreLedger.HEAD_STEP + 7; i++) {
          long position = ledger.size();
          ledger.append(
              new StoredRun(
                  position,
                  "run-" + round + "-" + position,
                  position,
                  zeros,
                  zeros,
                  new Outcome.Completed(),
                  "run",
                  zeros,
                  zeros,
                  0,
                  zeros,
                  zeros,
                  zeros));
        }
        ledger.signHead(key);
        if (round == 1) {
          // As a commit that fails after the head is signed: rolled back, the ledger reset.
          c.rollback();
          ledger.reset(before);
        } else {
          c.commit();
        }
      }
      long step = StoreLedger.HEAD_STEP + 7;
      // Heads at one step and (after the rolled-back one) again at two steps: the second is the
      // commit of round 2, whose runs differ from those of the head rolled back at the same count.
      assertEquals(2 * step, ledger.size());
      Envelope second = ledger.signedHeadAtMost(Long.MAX_VALUE).orElseThrow();
      assertEquals(2 * step, StoreHead.fromCore(second.core()).runs());
      assertEquals(ledger.chain(), StoreHead.fromCore(second.core()).chain());
      assertEquals(
          step,
          StoreHead.fromCore(ledger.signedHeadAtMost(2 * step - 1).orElseThrow().core()).runs());
      assertTrue(ledger.signedHeadAtMost(step - 1).isEmpty());
    }
  }
}
