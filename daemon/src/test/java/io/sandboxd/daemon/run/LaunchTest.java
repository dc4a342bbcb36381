package io.sandboxd.daemon.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Outcome;
import io.sandboxd.executor.Consumed;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.ParkSignal;
import io.sandboxd.executor.UnitCompiler;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** A durable run's segments launched directly: a park, a resume from its snapshot, its budget. */
class LaunchTest {
  // Each call of "step" counts one more in memory and logs "count <last digit>"; the run asks for
  // another step until the count reaches 5, so every step boundary is a place to park.
  static final String COUNTER =
      """
      (module
        (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
        (memory (export "memory") 1 1)
        (data (i32.const 0) "count 0")
        (func (export "step") (result i32) (local $c i32)
          (local.set $c (i32.add (i32.load (i32.const 64)) (i32.const 1)))
          (i32.store (i32.const 64) (local.get $c))
          (i32.store8 (i32.const 6) (i32.add (i32.const 48) (local.get $c)))
          (drop (call $log (i32.const 0) (i32.const 7)))
          (i32.lt_u (local.get $c) (i32.const 5))))
      """;

  static final String GRANTS = TestExecutor.LOGGING_GRANTS;

  @RegisterExtension static final TestExecutor executor = new TestExecutor(2, 60_000);

  @TempDir Path tmp;

  Admission.Admitted admitted() {
    return new Admission(new UnitCompiler(4), Set.of(DeviceClass.Cpu))
        .admit(Wat2Wasm.parse(COUNTER), GRANTS, "step");
  }

  Launch launch() {
    return new Launch(executor.get(), tmp.resolve("base"), OfferedEnvironments.none());
  }

  @Test
  void aSegmentParksAtItsBoundaryAndTheNextResumesFromItsSnapshot() {
    Admission.Admitted a = admitted();
    Launch launch = launch();
    Path root = tmp.resolve("durable/run-1");
    ParkSignal park = new ParkSignal();
    park.request();
    ExecutionResult first =
        launch.segment(
            "run-1",
            a,
            Optional.empty(),
            new Launch.Segment(root, park, List.of("seen:x"), Consumed.NONE, Optional.empty()));
    assertTrue(first.parked().isPresent(), "parked at the first boundary: " + first.outcome());
    assertEquals("count 1", first.log().strip());
    // The segment's storage is the run's own root, not the module's under the base.
    assertTrue(Files.isDirectory(root));
    assertFalse(Files.exists(tmp.resolve("base").resolve(a.unit().address())));

    ExecutionResult rest =
        launch.segment(
            "run-1",
            a,
            Optional.empty(),
            new Launch.Segment(
                root, new ParkSignal(), List.copyOf(first.taint()), Consumed.NONE, first.parked()));
    assertTrue(rest.parked().isEmpty());
    assertInstanceOf(Outcome.Completed.class, rest.outcome());
    // Counting goes on from the frozen memory: a fresh start would log "count 1" again.
    assertEquals(List.of("count 2", "count 3", "count 4", "count 5"), rest.log().lines().toList());
    assertTrue(rest.taint().contains("seen:x"), "carried taint kept: " + rest.taint());
  }

  @Test
  void aSegmentGetsOnlyWhatEarlierSegmentsLeftOfTheBudget() {
    Admission.Admitted a = admitted();
    long budget = a.grants().compute().energyBudgetUj();
    ExecutionResult spent =
        launch()
            .segment(
                "run-2",
                a,
                Optional.empty(),
                new Launch.Segment(
                    tmp.resolve("durable/run-2"),
                    new ParkSignal(),
                    List.of(),
                    new Consumed(0, budget),
                    Optional.empty()));
    Outcome.Terminated t = assertInstanceOf(Outcome.Terminated.class, spent.outcome());
    assertEquals(Outcome.Breach.EnergyBudget, t.breach());
  }
}
