package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.Outcome;
import io.sandboxd.enforcer.Grants;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** Re-execution from the journal reaches the same outcome and root, or names where it diverged. */
class ReplayTest {
  static final Executor EXECUTOR = new Executor(1, EnergyModel.estimate(10_000), 60_000);
  static final UnitCompiler COMPILER = new UnitCompiler(8);

  // Branches on a random draw and on the clock, so a replay that saw different inputs would log
  // and return differently.
  static final String WAT =
      """
      (module
        (import "sandbox" "random_u64" (func $rnd (param i32) (result i32)))
        (import "sandbox" "clock_now" (func $clock (param i32) (result i32)))
        (import "sandbox" "yield_point" (func $yield (result i32)))
        (memory 1)
        (func (export "run") (result i32)
          (drop (call $rnd (i32.const 0)))
          (drop (call $clock (i32.const 8)))
          (drop (call $yield))
          (drop (call $rnd (i32.const 16)))
          (i32.and (i32.xor (i32.load (i32.const 0)) (i32.load (i32.const 16))) (i32.const 0))))
      """;

  static Grants grants() {
    return ExecutorTest.grants(
        "{\"logging\":false,\"clock\":true,\"random\":true,\"inference\":false}",
        5000,
        1_048_576,
        1_000_000_000L);
  }

  @AfterAll
  static void close() {
    EXECUTOR.close();
  }

  @Test
  void replayFollowsTheJournalToTheSameRoot() {
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(WAT));
    ExecutionResult live = EXECUTOR.execute(new UnitRequest("r", unit, "run", grants()));
    assertEquals(new Outcome.Completed(), live.outcome());
    assertEquals(4, live.journal().size());

    ExecutionResult again = EXECUTOR.execute(new UnitRequest("r", unit, "run", grants()));
    assertNotEquals(live.journalRoot(), again.journalRoot(), "live random draws differ");

    ReplaySource source = new ReplaySource(live.journal(), live.journalBlobs());
    ExecutionResult replay =
        EXECUTOR.execute(new UnitRequest("r", unit, "run", grants()).withReplay(source));
    assertEquals(live.outcome(), replay.outcome());
    assertEquals(live.journalRoot(), replay.journalRoot());
    assertEquals(0, source.remaining());
    assertTrue(replay.replayDivergence().isEmpty(), "no divergence");
  }

  @Test
  void aDifferentUnitDivergesAtTheFirstDifferingEntry() {
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(WAT));
    ExecutionResult live = EXECUTOR.execute(new UnitRequest("r", unit, "run", grants()));
    // Swap entries 1 and 2 of the record: the replay asks clock_now where the record says yield.
    List<JournalEntry> entries = new ArrayList<>(live.journal());
    JournalEntry e1 = entries.get(1);
    entries.set(1, entries.get(2));
    entries.set(2, e1);
    ReplaySource source = new ReplaySource(entries, live.journalBlobs());
    ExecutionResult replay =
        EXECUTOR.execute(new UnitRequest("r", unit, "run", grants()).withReplay(source));
    assertTrue(replay.outcome() instanceof Outcome.Failed, replay.outcome().toString());
    ReplaySource.Divergence d = replay.replayDivergence().orElseThrow();
    assertEquals(1, d.seq());
    assertTrue(d.expected().startsWith("yield_point"), d.expected());
    assertTrue(d.actual().startsWith("clock_now"), d.actual());
  }

  @Test
  void aMissingResponseBlobIsADivergenceNotACrash() {
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(WAT));
    ExecutionResult live = EXECUTOR.execute(new UnitRequest("r", unit, "run", grants()));
    Map<String, byte[]> blobs = new HashMap<>(live.journalBlobs());
    blobs.remove(live.journal().get(0).response());
    ReplaySource source = new ReplaySource(live.journal(), blobs);
    EXECUTOR.execute(new UnitRequest("r", unit, "run", grants()).withReplay(source));
    assertEquals(0, source.divergence().seq());
  }
}
