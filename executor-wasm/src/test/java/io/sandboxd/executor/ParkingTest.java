package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Outcome;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Parking at a boundary and resuming on a fresh instance: a unit parked any number of times ends
 * with the same result and the same log, split across its segments, as an unparked run.
 */
class ParkingTest {
  static final Executor EXECUTOR = new Executor(1, EnergyModel.estimate(10_000), 60_000);
  static final UnitCompiler COMPILER = new UnitCompiler(8);

  static Grants grants() {
    return ExecutorTest.grants(ExecutorTest.LOG_ONLY, 60_000, 16_777_216, 100_000_000_000L);
  }

  @AfterAll
  static void close() {
    EXECUTOR.close();
  }

  /** {@code req} with its park asked for before it starts: it parks at its first boundary. */
  private static UnitRequest parkingAtOnce(UnitRequest req) {
    ParkSignal signal = new ParkSignal();
    signal.request();
    return req.withPark(signal);
  }

  /** The snapshot {@code unit}'s {@code step} entry parks in when asked to park at once. */
  private static InstanceSnapshot firstStepParked(CompiledUnit unit) {
    return EXECUTOR
        .execute(parkingAtOnce(new UnitRequest("r", unit, "step", grants())))
        .parked()
        .orElseThrow();
  }

  /** Runs {@code entry} of {@code unit} parking {@code parks} times, then to its end. */
  private static String runParked(CompiledUnit unit, String entry, int parks, int n) {
    StringBuilder log = new StringBuilder();
    InstanceSnapshot snap = null;
    for (int segment = 0; segment <= parks; segment++) {
      UnitRequest req = new UnitRequest("r", unit, entry, grants());
      if (snap != null) {
        req = req.withResume(snap);
      }
      boolean park = segment < parks;
      if (park) {
        req = parkingAtOnce(req);
      }
      ExecutionResult r = EXECUTOR.execute(req);
      assertEquals(new Outcome.Completed(), r.outcome(), "segment " + segment);
      log.append(r.log());
      assertEquals(park, r.parked().isPresent(), "segment " + segment + " parked");
      if (park) {
        InstanceSnapshot next = r.parked().orElseThrow();
        assertEquals(unit.address(), next.module());
        if (snap != null) {
          assertNotEquals(snap.address(), next.address(), "each segment made progress");
        }
        snap = next;
      }
    }
    return log.toString();
  }

  @Test
  void aStepUnitParkedAfterKStepsFinishesLikeAnUnparkedRun() {
    long seed = new Random().nextLong();
    Random rnd = new Random(seed);
    int n = 12;
    CompiledUnit unit = COMPILER.compile(DurableUnits.counterStep(n, 1000));
    ExecutionResult whole = EXECUTOR.execute(new UnitRequest("r", unit, "step", grants()));
    assertEquals(new Outcome.Completed(), whole.outcome());
    assertEquals(DurableUnits.expectedLog("step", n), whole.log());
    assertTrue(whole.parked().isEmpty());
    // Requested before the run, a park takes effect at the first boundary: k parks = k steps.
    int k = 1 + rnd.nextInt(n - 1);
    assertEquals(whole.log(), runParked(unit, "step", k, n), "seed " + seed + ", k " + k);
  }

  @Test
  void aRunUnitParksWhenYieldPointAnswersPark() {
    int n = 7;
    CompiledUnit unit = COMPILER.compile(DurableUnits.counterRun(n, 1000));
    ExecutionResult whole = EXECUTOR.execute(new UnitRequest("r", unit, "run", grants()));
    assertEquals(DurableUnits.expectedLog("tick", n), whole.log());
    assertEquals(whole.log(), runParked(unit, "run", n - 1, n));
  }

  @Test
  void aResumedRunStartsWithTheTaintItWasParkedWith() {
    CompiledUnit unit = COMPILER.compile(DurableUnits.counterRun(3, 10));
    String label = "storage:inbox/**";
    ExecutionResult r =
        EXECUTOR.execute(
            new UnitRequest("r", unit, "run", grants()).withTaint(java.util.List.of(label)));
    assertEquals(java.util.Set.of(label), r.taint());
    // Every host call was decided under it (the journal records the taint after each call).
    assertTrue(!r.journal().isEmpty());
    assertTrue(
        r.journal().stream().allMatch(e -> e.taintAfter().contains(label)), r.journal()::toString);
    ExecutionResult fresh = EXECUTOR.execute(new UnitRequest("r", unit, "run", grants()));
    assertTrue(fresh.taint().isEmpty(), "a run not resumed starts clean");
  }

  @Test
  void withoutARequestNothingParks() {
    CompiledUnit unit = COMPILER.compile(DurableUnits.counterRun(5, 10));
    ParkSignal signal = new ParkSignal();
    ExecutionResult r =
        EXECUTOR.execute(new UnitRequest("r", unit, "run", grants()).withPark(signal));
    assertTrue(r.parked().isEmpty());
    assertEquals(DurableUnits.expectedLog("tick", 5), r.log());
    // Every yield_point answer is journaled: OK five times minus the last count's none.
    assertEquals(4, r.journal().stream().filter(e -> e.call().equals("yield_point")).count());
  }

  @Test
  void aParkedRunReplaysToTheSameSnapshot() {
    for (String entry : new String[] {"step", "run"}) {
      CompiledUnit unit =
          COMPILER.compile(
              entry.equals("step")
                  ? DurableUnits.counterStep(6, 100)
                  : DurableUnits.counterRun(6, 100));
      ExecutionResult live =
          EXECUTOR.execute(parkingAtOnce(new UnitRequest("r", unit, entry, grants())));
      InstanceSnapshot parked = live.parked().orElseThrow();
      // The replay is not asked to park: the journal's PARK answer parks it at the same boundary.
      ReplaySource source = new ReplaySource(live.journal(), live.journalBlobs());
      ExecutionResult replay =
          EXECUTOR.execute(new UnitRequest("r", unit, entry, grants()).withReplay(source));
      assertTrue(replay.replayDivergence().isEmpty(), entry + ": " + replay.replayDivergence());
      assertEquals(live.journalRoot(), replay.journalRoot(), entry);
      assertEquals(parked.address(), replay.parked().orElseThrow().address(), entry);
    }
  }

  @Test
  void aSnapshotOfAnotherModuleIsRefused() {
    CompiledUnit a = COMPILER.compile(DurableUnits.counterStep(5, 10));
    CompiledUnit b = COMPILER.compile(DurableUnits.counterStep(6, 10));
    InstanceSnapshot snap = firstStepParked(a);
    SnapshotException.Mismatch e =
        assertThrows(
            SnapshotException.Mismatch.class,
            () -> EXECUTOR.execute(new UnitRequest("r", b, "step", grants()).withResume(snap)));
    assertTrue(e.getMessage().contains(b.address()), e.getMessage());
  }

  @Test
  void aGuestReturningParkUnaskedFails() {
    CompiledUnit unit =
        COMPILER.compile(
            com.dylibso.chicory.wabt.Wat2Wasm.parse(
                "(module (memory 1) (func (export \"run\") (result i32) (i32.const 1)))"));
    ExecutionResult r =
        EXECUTOR.execute(parkingAtOnce(new UnitRequest("r", unit, "run", grants())));
    assertTrue(r.parked().isEmpty());
    assertEquals(new Outcome.Failed("entry returned 1"), r.outcome());
  }

  @Test
  void aSnapshotTooLargeForTheGrantIsAMemoryBreach() {
    CompiledUnit unit = COMPILER.compile(DurableUnits.counterStep(5, 10));
    InstanceSnapshot snap = firstStepParked(unit);
    assertEquals(4, snap.memoryPages().getAsInt(), "the first step grew memory to 4 pages");
    String tight =
        new String(grants().canonicalBytes(), StandardCharsets.UTF_8)
            .replace("\"memory_bytes\":16777216", "\"memory_bytes\":196608");
    Grants small = Grants.parse(tight.getBytes(StandardCharsets.UTF_8));
    ExecutionResult r =
        EXECUTOR.execute(new UnitRequest("r", unit, "step", small).withResume(snap));
    assertEquals(new Outcome.Terminated(Outcome.Breach.Memory), r.outcome());
  }
}
