package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.StoreCheckpoint;
import io.sandboxd.attest.StoreHead;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Start-up verification from a sealed checkpoint: it checks only the runs after it (whatever the
 * store holds), still catches what the head signs store-wide, and leaves damage to older runs to
 * the full check, which still finds it.
 */
class StoreCheckpointTest extends StoreFileFixture {
  /** Stores runs 0 .. {@code n - 1} and seals a checkpoint at them by a start-up check. */
  private void fillAndSeal(RunStore store, int n) {
    fill(store, 0, n);
    assertEquals(List.of(), store.verifyFromCheckpoint().damage());
  }

  /**
   * Leaves a closed store of runs 0 .. {@code sealed - 1} sealed by a checkpoint and {@code more}
   * runs stored after it.
   */
  private void sealedThenMore(int sealed, int more) {
    try (RunStore store = RunStore.open(file(), key)) {
      fillAndSeal(store, sealed);
      fill(store, sealed, more);
    }
  }

  /**
   * A start-up check of {@code store} that finds no damage, from a checkpoint sealed at {@code
   * checkpointRuns} runs.
   */
  private static RunStore.StartupCheck cleanFromCheckpoint(RunStore store, long checkpointRuns) {
    RunStore.StartupCheck check = store.verifyFromCheckpoint();
    assertEquals(List.of(), check.damage());
    assertEquals(checkpointRuns, check.checkpointRuns());
    return check;
  }

  @Test
  void startUpChecksOnlyTheRunsAfterTheCheckpointAndSealsThem() {
    try (RunStore store = RunStore.open(file(), key)) {
      RunStore.StartupCheck empty = store.verifyFromCheckpoint();
      assertEquals(List.of(), empty.damage());
      assertEquals(0, empty.verifiedRuns());
      fill(store, 0, 50);
      // No checkpoint yet: everything is checked once, then sealed.
      RunStore.StartupCheck first = cleanFromCheckpoint(store, 0);
      assertEquals(50, first.verifiedRuns());
      assertEquals(50, store.checkpoint().orElseThrow().runs());
      fill(store, 50, 7);
    }
    try (RunStore store = RunStore.open(file(), key)) {
      RunStore.StartupCheck next = cleanFromCheckpoint(store, 50);
      assertEquals(7, next.verifiedRuns());
      assertEquals(57, next.headRuns());
      RunStore.StartupCheck again = store.verifyFromCheckpoint();
      assertEquals(0, again.verifiedRuns());
    }
  }

  @Test
  void damageAfterTheCheckpointStopsStartUpAndDamageBeforeItIsFoundByTheFullCheck()
      throws Exception {
    sealedThenMore(20, 5);
    sql("UPDATE runs SET outcome = '{\"Failed\":{\"reason\":\"x\"}}' WHERE run_id = 'run-00003'");
    sql("UPDATE runs SET log = 'rewritten' WHERE run_id = 'run-00022'");
    try (RunStore store = RunStore.open(file(), key)) {
      List<StoreDamage> startUp = store.verifyFromCheckpoint().damage();
      assertEquals(1, startUp.size(), startUp.toString());
      assertEquals("run-00022", startUp.get(0).runId());
      assertEquals("log", startUp.get(0).column());
      // A damaged start-up check seals nothing.
      assertEquals(20, store.checkpoint().orElseThrow().runs());
      // The old run's damage: not in the start-up check, but the full check names it, and reads
      // never show its stored values.
      List<StoreDamage> full = store.verifyAll();
      assertTrue(full.stream().anyMatch(d -> d.runId().equals("run-00003")), full.toString());
      assertTrue(full.stream().anyMatch(d -> d.runId().equals("run-00022")), full.toString());
      assertTrue(store.run("run-00003").orElseThrow().tampered().isPresent());
    }
  }

  @Test
  void startUpReadsNoRunBeforeTheCheckpointAndLeavesASwappedRowToTheFullCheck() throws Exception {
    sealedThenMore(40, 3);
    // Every run before the checkpoint rewritten: a start-up that read any of them would say so.
    sql("UPDATE runs SET log = 'rewritten' WHERE run_id < 'run-00040'");
    // A row the ledger does not sign in place of a deleted one: the counts still agree, so only a
    // scan of every run (the full check's) finds it.
    sql(
        "INSERT INTO runs (run_id, created_ms, unit, grants_id, outcome, log, grants, entry)"
            + " SELECT 'run-99999', created_ms, unit, grants_id, outcome, log, grants, entry"
            + " FROM runs WHERE run_id = 'run-00005'");
    sql("DELETE FROM runs WHERE run_id = 'run-00006'");
    try (RunStore store = RunStore.open(file(), key)) {
      RunStore.StartupCheck c = cleanFromCheckpoint(store, 40);
      assertEquals(3, c.verifiedRuns());
      // Reads check the row they show: the unsigned one is never shown as a run.
      assertTrue(store.run("run-99999").orElseThrow().tampered().isPresent());
      List<StoreDamage> full = store.verifyAll();
      for (String id : List.of("run-99999", "run-00006", "run-00000", "run-00039")) {
        assertTrue(full.stream().anyMatch(d -> d.runId().equals(id)), id + ": " + full);
      }
    }
  }

  @Test
  void storeWideChangesAreCaughtAtStartUpWhateverTheirAge() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fillAndSeal(store, 10);
    }
    // An old run deleted with its ledger record: the signed head's count says so at once.
    sql("DELETE FROM run_records WHERE run_id = 'run-00002'");
    sql("DELETE FROM journal WHERE run_id = 'run-00002'");
    sql("DELETE FROM runs WHERE run_id = 'run-00002'");
    sql("DELETE FROM ledger WHERE run_id = 'run-00002'");
    try (RunStore store = RunStore.open(file(), key)) {
      List<StoreDamage> d = store.verifyFromCheckpoint().damage();
      assertFalse(d.isEmpty());
      assertTrue(d.get(0).toString().contains("a run was deleted or inserted"), d.toString());
    }
  }

  @Test
  void aForgedOrCopiedCheckpointIsDamageAndTheWholeStoreIsChecked() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fillAndSeal(store, 5);
    }
    // The signed store head copied in as a checkpoint: another schema, refused.
    String head;
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file());
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT envelope FROM store_head")) {
      rs.next();
      head = rs.getString(1);
    }
    assertEquals(
        StoreHead.SCHEMA, Envelope.fromJson(CanonicalJson.parse(head)).schema().orElseThrow());
    sql("UPDATE store_checkpoint SET envelope = '" + head + "'");
    sql("UPDATE runs SET log = 'rewritten' WHERE run_id = 'run-00001'");
    try (RunStore store = RunStore.open(file(), key)) {
      RunStore.StartupCheck c = store.verifyFromCheckpoint();
      assertTrue(
          c.damage().stream().anyMatch(d -> d.column().equals("store_checkpoint")),
          c.damage().toString());
      // Checked from genesis instead: the old run's damage is found at start-up.
      assertTrue(
          c.damage().stream().anyMatch(d -> d.runId().equals("run-00001")), c.damage().toString());
      assertEquals(5, c.verifiedRuns());
    }
    // One signed by another key does not verify.
    SigningKey other = SigningKey.generate();
    String forged =
        Envelope.sign(new StoreCheckpoint(5, StoreHead.EMPTY_CHAIN, 1).toCore(), other)
            .toJsonLine();
    sql("UPDATE store_checkpoint SET envelope = '" + forged + "'");
    try (RunStore store = RunStore.open(file(), key)) {
      assertTrue(
          store.verifyFromCheckpoint().damage().stream()
              .anyMatch(d -> d.column().equals("store_checkpoint")));
    }
  }

  @Test
  void theBackgroundVerifierFindsOldDamageAndSealsACleanStore() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fill(store, 0, 30);
      List<StoreVerifier.State> heard = new ArrayList<>();
      try (StoreVerifier v = new StoreVerifier(store, heard::add)) {
        StoreVerifier.State s = v.verifyNow();
        assertEquals(StoreVerifier.Phase.VERIFIED, s.phase(), s.toString());
        assertEquals(30, s.totalRuns());
        assertEquals(30, store.checkpoint().orElseThrow().runs());
        sql("UPDATE runs SET grants = '{}' WHERE run_id = 'run-00004'");
        StoreVerifier.State bad = v.verifyNow();
        assertEquals(StoreVerifier.Phase.DAMAGED, bad.phase());
        assertEquals("run-00004", bad.damage().get(0).runId());
        assertEquals("grants", bad.damage().get(0).column());
        assertTrue(store.run("run-00004").orElseThrow().tampered().isPresent());
        assertEquals(2, heard.size());
      }
    }
  }

  @Test
  void runsAppendedDuringALongFullPassAreSealedBeforeItEnds() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fillAndSeal(store, 600);
      // At 1% of a core the full pass over 600 runs lasts many times what sealing 12 takes.
      try (StoreVerifier v = started(store, 10, 20, 1)) {
        fill(store, 600, 12);
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (store.checkpoint().orElseThrow().runs() != 612) {
          assertTrue(System.nanoTime() < deadline, "not sealed: " + v.state());
          Thread.sleep(10);
        }
        assertEquals(StoreVerifier.Phase.RUNNING, v.state().phase(), v.state().toString());
      }
    }
  }

  /** Waits until {@code v} is in {@code phase}, failing past {@code deadline} (nanoTime). */
  private static void await(StoreVerifier v, StoreVerifier.Phase phase, long deadline)
      throws InterruptedException {
    while (v.state().phase() != phase) {
      assertTrue(System.nanoTime() < deadline, v.state().toString());
      Thread.sleep(5);
    }
  }

  @Test
  void aBackgroundPassOfOneSliceIsHeldToItsShareOfACore() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      // Fewer runs than a slice: the whole pass is its last slice.
      fill(store, 0, (int) StoreVerifier.SLICE_RUNS / 2);
      try (StoreVerifier v = started(store, 10, 20, 20)) {
        long deadline = System.nanoTime() + 120_000_000_000L;
        await(v, StoreVerifier.Phase.VERIFIED, deadline);
        CpuShare.Use use = v.backgroundUse();
        assertTrue(use.cpuNanos() > 0, use.toString());
        // Sleeping guarantees at least the time asked for; a pause under 5 ms may be skipped.
        assertTrue(
            use.cpuNanos() * 100 / 20 <= use.wallNanos() + 5_000_000L,
            use + ": " + use.percentOfOneCore() + "% of a core");
      }
    }
  }

  @Test
  void aBackgroundPassHeldToItsShareGoesOnAtTheIdleShareOnceTheNodeIsIdle() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fill(store, 0, 600);
      AtomicBoolean idle = new AtomicBoolean(false);
      // At 1% of a core the pass over 600 runs would take a minute or more.
      CpuShare share = new CpuShare(1, 100, idle::get);
      try (StoreVerifier v =
          new StoreVerifier(
              store, s -> {}, new StoreVerifier.Cadence(10, StoreVerifier.MAX_PASS, 20), share)) {
        v.start();
        long deadline = System.nanoTime() + 120_000_000_000L;
        await(v, StoreVerifier.Phase.RUNNING, deadline);
        // Busy for a while: after its first slice the pass sleeps off its debt at 1%.
        Thread.sleep(300);
        assertEquals(StoreVerifier.Phase.RUNNING, v.state().phase(), v.state().toString());
        assertEquals(0, share.use().idleCpuNanos());
        idle.set(true);
        await(v, StoreVerifier.Phase.VERIFIED, deadline);
        assertEquals(600, store.checkpoint().orElseThrow().runs());
        CpuShare.Use use = share.use();
        // The rest of the pass ran idle, well above the 1% it is held to while runs come.
        assertTrue(use.idleCpuNanos() > 0, use.toString());
        assertTrue(use.idleCpuNanos() * 100 > 2 * use.idleWallNanos(), use.toString());
      }
    }
  }

  @Test
  void anOnDemandCheckTakesOverFromAThrottledBackgroundPass() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fill(store, 0, 600);
      List<StoreVerifier.State> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
      // At 1% of a core the background pass over 600 runs would take a minute or more.
      try (StoreVerifier v = new StoreVerifier(store, heard::add, 10, 20, 1)) {
        v.start();
        long deadline = System.nanoTime() + 60_000_000_000L;
        await(v, StoreVerifier.Phase.RUNNING, deadline);
        StoreVerifier.State s = v.verifyNow();
        assertEquals(StoreVerifier.Phase.VERIFIED, s.phase(), s.toString());
        assertEquals(600, s.totalRuns());
        assertEquals(600, store.checkpoint().orElseThrow().runs());
        // The background pass ended unfinished, before the on-demand one, and said why.
        assertEquals(2, heard.size(), heard.toString());
        assertEquals(StoreVerifier.Phase.PENDING, heard.get(0).phase());
        assertEquals("gave way to an on-demand check", heard.get(0).failure());
        assertEquals(s, heard.get(1));
        // The background thread goes on: runs appended later are still sealed. Its pass is held
        // to 1% and seals after sleeping off its CPU (a hundred times that CPU): on a loaded
        // machine that alone took longer than the minute left of the first deadline (one suite
        // in three here), so the wait has a deadline of its own.
        fill(store, 600, 12);
        long sealBy = System.nanoTime() + 180_000_000_000L;
        while (store.checkpoint().orElseThrow().runs() != 612) {
          assertTrue(System.nanoTime() < sealBy, "not sealed: " + v.state());
          Thread.sleep(10);
        }
      }
    }
  }

  @Test
  void aStopSealsTheRunsSinceTheCheckpointSoTheNextStartChecksNone() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fillAndSeal(store, 30);
      fill(store, 30, 600);
      // A throttled background pass is under way (1% of a core: it would take a minute or more).
      try (StoreVerifier v = started(store, 100_000, 20, 1)) {
        await(v, StoreVerifier.Phase.RUNNING, System.nanoTime() + 60_000_000_000L);
        assertEquals(600, v.sealBeforeStop(60_000));
        assertEquals(630, sealedRuns(store));
        // Nothing more to seal: a second stop's seal does nothing.
        assertEquals(0, v.sealBeforeStop(60_000));
      }
    }
    try (RunStore store = RunStore.open(file(), key)) {
      RunStore.StartupCheck next = cleanFromCheckpoint(store, 630);
      assertEquals(0, next.verifiedRuns());
    }
  }

  @Test
  void aStopOutOfTimeSealsNothingAndLeavesTheRunsToStartUp() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fillAndSeal(store, 10);
      fill(store, 10, 2_000);
      try (StoreVerifier v = new StoreVerifier(store, s -> {}, 100_000, 20, 1)) {
        assertEquals(0, v.sealBeforeStop(0));
        assertEquals(0, v.sealBeforeStop(-5));
        // 2,000 runs' signatures take far longer than a millisecond to check.
        assertEquals(0, v.sealBeforeStop(1));
        assertEquals(10, sealedRuns(store));
        // The budget held only that stop: the next has time and seals them all.
        assertEquals(2_000, v.sealBeforeStop(60_000));
      }
    }
  }

  @Test
  void damageFoundAtAStopIsReportedAndNothingIsSealed() throws Exception {
    sealedThenMore(20, 5);
    sql("UPDATE runs SET log = 'rewritten' WHERE run_id = 'run-00022'");
    try (RunStore store = RunStore.open(file(), key);
        StoreVerifier v = new StoreVerifier(store, s -> {}, 100_000, 20, 1)) {
      assertEquals(0, v.sealBeforeStop(60_000));
      assertEquals(20, sealedRuns(store));
      assertEquals(StoreVerifier.Phase.DAMAGED, v.state().phase(), v.state().toString());
      assertTrue(v.state().damage().stream().anyMatch(d -> d.runId().equals("run-00022")));
    }
  }

  @Test
  void aVerifierFarBehindSealsStepByStepAgainstHeadsSignedHereAndNeverOneRolledBack()
      throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fillAndSeal(store, 10);
      // One commit each: heads at 1,110, 2,210 and 3,310 runs (a head kept every 1,024 runs).
      fill(store, 10, 1_100);
      fill(store, 1_110, 1_100);
      fill(store, 2_210, 1_100);
      // A commit that fails after signing its head at 4,810 runs: that head must be forgotten.
      List<RunRecord> failing = new ArrayList<>();
      for (int i = 3_310; i < 4_809; i++) {
        failing.add(TestRuns.simple(key, String.format("other-%05d", i), 9_000 + i));
      }
      failing.add(TestRuns.simple(key, "run-00005", 1));
      assertThrows(StoreException.class, () -> store.appendAll(failing));
      fill(store, 3_310, 1_100); // head at 4,410, kept
      fill(store, 4_410, 400); // head at 4,810 (other runs than the forgotten one's), not kept
      fill(store, 4_810, 190); // the store's head: 5,000 runs
      List<Long> steps = new ArrayList<>();
      try (StoreVerifier v =
          new StoreVerifier(store, s -> {}, new StoreVerifier.Cadence(100_000, 1_500, 20), 100)) {
        while (v.sealStep()) {
          steps.add(sealedRuns(store));
        }
        assertEquals(StoreVerifier.Phase.PENDING, v.state().phase(), v.state().toString());
      }
      // At most 1,500 runs a step, each up to a head signed here; the last up to the store's.
      assertEquals(List.of(1_110L, 2_210L, 3_310L, 4_410L, 5_000L), steps);
    }
    try (RunStore store = RunStore.open(file(), key)) {
      cleanFromCheckpoint(store, 5_000);
    }
  }

  @Test
  void aStopFarBehindSealsEveryStepItHasTimeFor() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fillAndSeal(store, 10);
      for (int from = 10; from < 10 + 8 * 1_100; from += 1_100) {
        fill(store, from, 1_100);
      }
      try (StoreVerifier v =
          new StoreVerifier(store, s -> {}, new StoreVerifier.Cadence(100_000, 1_100, 20), 100)) {
        // Eight steps of one head each: a stop goes on from step to step while it has time.
        assertEquals(8 * 1_100, v.sealBeforeStop(60_000));
        assertEquals(10 + 8 * 1_100, sealedRuns(store));
      }
    }
  }

  /**
   * A verifier of {@code store} (seal every, poll ms, CPU percent: as its constructor), started.
   */
  private static StoreVerifier started(RunStore store, long sealEvery, long pollMs, int percent) {
    StoreVerifier v = new StoreVerifier(store, s -> {}, sealEvery, pollMs, percent);
    v.start();
    return v;
  }

  /** The runs the store's checkpoint seals (0 before the first). */
  private static long sealedRuns(RunStore store) {
    return store.checkpoint().map(StoreCheckpoint::runs).orElse(0L);
  }

  @Test
  void newRunsAreSealedWhileMoreKeepComingFasterThanTheVerifierChecks() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      // A pass sleeps off its CPU at the share: the first in a JVM runs the audit interpreted
      // (the store head's signature check included), 35-280 ms here, which at 1% of a core was
      // 3.5-28 s of sleep before the test began, and 60 s did not always suffice. A pass at a full
      // core pays for the loading first, and the default share (5%) keeps the rest in bounds.
      try (StoreVerifier warm = started(store, 10, 20, 100)) {
        await(warm, StoreVerifier.Phase.VERIFIED, System.nanoTime() + 60_000_000_000L);
      }
      // At 5% of a core the verifier checks far fewer runs a second than are appended here: a
      // pass that chased the ledger's end would not end, nor seal, before the appends stop.
      try (StoreVerifier v =
          started(
              store, 10, 20, io.sandboxd.config.DaemonConfig.Store.DEFAULT_VERIFY_CPU_PERCENT)) {
        long deadline = System.nanoTime() + 60_000_000_000L;
        await(v, StoreVerifier.Phase.VERIFIED, deadline);
        // More than a slice at once, so that the first pass over new runs takes several slices.
        int appended = 5 * (int) StoreVerifier.SLICE_RUNS;
        fill(store, 0, appended);
        long sealed = 0;
        while (sealed == 0) {
          assertTrue(System.nanoTime() < deadline, "nothing sealed after " + appended + " runs");
          fill(store, appended, 20);
          appended += 20;
          sealed = sealedRuns(store);
        }
        // Sealed at a head the store had signed, while runs were still being appended after it.
        assertTrue(sealed < appended, sealed + " sealed of " + appended);
        assertTrue(sealed >= 5 * StoreVerifier.SLICE_RUNS, "sealed at " + sealed);
      }
    }
  }

  @Test
  void aPassThatSealedIsFollowedAtOnceByTheRunsThatCameMeanwhile() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      // A poll of 20 s and a tenth of a core: the first seal comes after a poll, from a paced pass
      // over its ~1,000 runs (half a second or more) while runs keep coming every 100 ms; those are
      // sealed by the next pass at once, not a poll later (the poll between passes held the
      // verifier to about half its share under a steady load). The passes after it shorten until
      // one finds nothing new, and the loop then rightly sleeps a poll: so the seals are watched
      // every few ms from a thread of their own, not between appends, which could miss all but
      // the last of that quick run of seals.
      try (StoreVerifier v = started(store, 1, 20_000, 10)) {
        long deadline = System.nanoTime() + 60_000_000_000L;
        // The start-up pass over the empty store first: one that saw the first runs would seal
        // them itself, and the loop's first seal would then come only after its poll.
        await(v, StoreVerifier.Phase.VERIFIED, deadline);
        List<long[]> seals = new java.util.concurrent.CopyOnWriteArrayList<>();
        Thread watcher =
            new Thread(
                () -> {
                  long last = 0;
                  while (!Thread.currentThread().isInterrupted()) {
                    long sealed = sealedRuns(store);
                    if (sealed != last) {
                      seals.add(new long[] {sealed, System.nanoTime()});
                      last = sealed;
                    }
                    try {
                      Thread.sleep(2);
                    } catch (InterruptedException e) {
                      return;
                    }
                  }
                });
        watcher.start();
        try {
          int appended = 0;
          while (seals.size() < 2) {
            assertTrue(System.nanoTime() < deadline, "not sealed twice: " + v.state());
            fill(store, appended, 5);
            appended += 5;
            Thread.sleep(100);
          }
        } finally {
          watcher.interrupt();
          watcher.join();
        }
        long gapMs = (seals.get(1)[1] - seals.get(0)[1]) / 1_000_000;
        assertTrue(
            gapMs < 10_000,
            "sealed at " + seals.get(1)[0] + " " + gapMs + " ms after " + seals.get(0)[0]);
      }
    }
  }

  @Test
  void aBoundedAuditChecksTheHeadItStartedFromAgainstTheRunsBeforeIt() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fill(store, 0, 30);
      StoreAudit.Bound bound;
      try (Connection reader = store.openReader();
          Statements q = new Statements(reader)) {
        bound = StoreAudit.bound(reader).orElseThrow();
        reader.rollback();
        assertEquals(30, bound.runs());
        fill(store, 30, 5); // after the bound: not this audit's
        StoreAudit.Start start = StoreAudit.Start.GENESIS;
        StoreAudit.Slice s =
            StoreAudit.slice(
                q, key.publicKey(), start, bound.runs(), 64, p -> {}, null, StoreAudit.Depth.FULL);
        assertTrue(s.end());
        assertEquals(30, s.next().position());
        StoreAudit.Result r =
            StoreAudit.bounded(reader, key.publicKey(), start, s.next(), bound, s.damage());
        assertEquals(List.of(), r.damage());
        assertEquals(30, r.ledgerSize());
        // Stopped short of the bound (a position missing) or off the head's chain: damage.
        StoreAudit.Result shortOf =
            StoreAudit.bounded(
                reader,
                key.publicKey(),
                start,
                new StoreAudit.Start(29, s.next().chain()),
                bound,
                List.of());
        assertTrue(shortOf.damage().get(0).reason().contains("not dense"), shortOf.toString());
        StoreAudit.Result offChain =
            StoreAudit.bounded(
                reader,
                key.publicKey(),
                start,
                new StoreAudit.Start(30, StoreHead.EMPTY_CHAIN),
                bound,
                List.of());
        assertTrue(offChain.damage().get(0).reason().contains("hash chain"), offChain.toString());
        // A head signed by another key does not vouch for anything.
        StoreAudit.Result otherKey =
            StoreAudit.bounded(
                reader, SigningKey.generate().publicKey(), start, s.next(), bound, List.of());
        assertTrue(
            otherKey.damage().get(0).reason().contains("does not verify"), otherKey.toString());
      }
    }
  }

  @Test
  void runsAppendedWhileServingAreSealedAsTheyAccumulate() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fill(store, 0, 12);
      try (StoreVerifier v = started(store, 10, 20, 100)) {
        long deadline = System.nanoTime() + 60_000_000_000L;
        await(v, StoreVerifier.Phase.VERIFIED, deadline);
        assertEquals(12, store.checkpoint().orElseThrow().runs());
        fill(store, 12, 9); // fewer than 10 new runs: left for later
        Thread.sleep(200);
        assertEquals(12, store.checkpoint().orElseThrow().runs());
        fill(store, 21, 1);
        while (store.checkpoint().orElseThrow().runs() != 22) {
          assertTrue(System.nanoTime() < deadline, "not sealed: " + store.checkpoint());
          Thread.sleep(10);
        }
      }
    }
  }
}
