package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.wabt.Wat2Wasm;
import com.dylibso.chicory.wasm.ChicoryException;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class ExecutorTest {
  static final Executor EXECUTOR = new Executor(2, EnergyModel.estimate(10_000), 60_000);
  static final UnitCompiler COMPILER = new UnitCompiler(16);

  static final String HELLO =
      """
      (module
        (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
        (import "sandbox" "clock_now" (func $clock (param i32) (result i32)))
        (memory (export "memory") 1 4)
        (data (i32.const 16) "hello, sandbox")
        (func (export "run") (result i32)
          (drop (call $log (i32.const 16) (i32.const 14)))
          (drop (call $clock (i32.const 64)))
          (drop (call $clock (i32.const 72)))
          (i32.const 0)))
      """;

  // Grows memory a page at a time until growth fails, then returns the pages it has.
  static final String MEMORY_BOMB =
      """
      (module
        (memory 1)
        (func (export "run") (result i32)
          (loop $l (br_if $l (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))
          (memory.size)))
      """;

  static final String SPIN =
      """
      (module
        (memory 1)
        (func (export "run") (result i32)
          (loop $l (br $l))
          (i32.const 0)))
      """;

  @AfterAll
  static void close() {
    EXECUTOR.close();
  }

  static Grants grants(String host, long cpuMs, long memoryBytes, long energyUj) {
    return grants("{\"read\":[],\"write\":[],\"delete\":[]}", host, cpuMs, memoryBytes, energyUj);
  }

  /** Grants of {@code storage} and {@code host} (JSON objects), no network, kv or devices. */
  static Grants grants(String storage, String host, long cpuMs, long memoryBytes, long energyUj) {
    String json =
        "{\"compute\":{\"devices\":[],\"energy_budget_uj\":"
            + energyUj
            + ",\"cpu_time_ms\":"
            + cpuMs
            + ",\"memory_bytes\":"
            + memoryBytes
            + "},"
            + "\"storage\":"
            + storage
            + ",\"network\":{\"outbound\":[],\"inbound\":false},"
            + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
            + "\"host\":"
            + host
            + "}";
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  static final String LOG_ONLY =
      "{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}";

  /** A unit whose entry logs the guest bytes {@code [ptr, ptr + len)} and returns the status. */
  static String logging(int ptr, int len) {
    return """
        (module
          (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
          (memory 1)
          (func (export "run") (result i32)
            (call $log (i32.const %d) (i32.const %d))))
        """
        .formatted(ptr, len);
  }

  ExecutionResult run(String wat, Grants g) {
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(wat));
    return EXECUTOR.execute(new UnitRequest("r1", unit, "run", g));
  }

  @Test
  void helloCompletesLogsAndJournalsTheNormalizedClock() {
    ExecutionResult r = run(HELLO, grants(LOG_ONLY, 5_000, 1 << 20, 1_000_000_000));
    assertEquals(new Outcome.Completed(), r.outcome());
    assertEquals("hello, sandbox\n", r.log());
    // Both reads of the ungranted clock follow from the grants: a replay recomputes them, so
    // nothing is journaled and the root is the empty journal's.
    assertEquals(List.of(), r.journal());
    assertEquals(Journal.rootOf(List.of()), r.journalRoot());
    assertEquals(Provenance.Estimator, r.energy().get(DeviceClass.Cpu).provenance());
    assertEquals(65536, r.memoryPeakBytes());
    assertEquals(64, r.journalRoot().length());
  }

  @Test
  void deniedLoggingIsAStatusNotATrap() {
    String none = "{\"logging\":false,\"clock\":false,\"random\":false,\"inference\":false}";
    ExecutionResult r = run(logging(0, 4), grants(none, 5_000, 1 << 20, 1_000_000_000));
    // The entry returns the status it got: DENIED (-1).
    assertEquals(new Outcome.Failed("entry returned -1"), r.outcome());
    assertEquals("", r.log());
  }

  @Test
  void outOfBoundsPointerIsFault() {
    ExecutionResult r = run(logging(65530, 100), grants(LOG_ONLY, 5_000, 1 << 20, 1_000_000_000));
    assertEquals(new Outcome.Failed("entry returned " + AbiStatus.FAULT), r.outcome());
  }

  @Test
  void infiniteLoopIsTerminatedOnCpuTime() {
    ExecutionResult r = run(SPIN, grants(LOG_ONLY, 50, 1 << 20, 9_000_000_000_000_000L));
    assertEquals(new Outcome.Terminated(Outcome.Breach.CpuTime), r.outcome());
    assertTrue(r.cpuTimeNanos() > 50_000_000L, "recorded CPU time is what was consumed");
  }

  @Test
  void aLaterSegmentRunsOnlyOnWhatTheEarlierOnesLeft() {
    CompiledUnit spin = COMPILER.compile(Wat2Wasm.parse(SPIN));
    Grants g = grants(LOG_ONLY, 200, 1 << 20, 9_000_000_000_000_000L);
    // 150 of 200 ms already spent: the segment is stopped after about 50 ms, not 200.
    ExecutionResult rest =
        EXECUTOR.execute(new UnitRequest("r1", spin, "run", g), new Consumed(150, 0));
    assertEquals(new Outcome.Terminated(Outcome.Breach.CpuTime), rest.outcome());
    assertTrue(rest.cpuTimeNanos() >= 50_000_000L, "ran on what was left: " + rest.cpuTimeNanos());
    assertTrue(
        rest.cpuTimeNanos() < 190_000_000L, "not on the whole grant: " + rest.cpuTimeNanos());
    // Nothing left: terminated at once, whatever the number of segments before.
    ExecutionResult none =
        EXECUTOR.execute(new UnitRequest("r2", spin, "run", g), new Consumed(200, 0));
    assertEquals(new Outcome.Terminated(Outcome.Breach.CpuTime), none.outcome());
    assertTrue(
        none.cpuTimeNanos() < 100_000_000L, "stopped on its first tick: " + none.cpuTimeNanos());
    // The energy budget is the run's too.
    Grants e = grants(LOG_ONLY, 60_000, 1 << 20, 1_000_000);
    ExecutionResult spent =
        EXECUTOR.execute(new UnitRequest("r3", spin, "run", e), new Consumed(0, 1_000_000));
    assertEquals(new Outcome.Terminated(Outcome.Breach.EnergyBudget), spent.outcome());
  }

  @Test
  void energyBudgetIsHard() {
    ExecutionResult r = run(SPIN, grants(LOG_ONLY, 60_000, 1 << 20, 1_000));
    assertEquals(new Outcome.Terminated(Outcome.Breach.EnergyBudget), r.outcome());
    assertTrue(Executor.totalUj(r.energy()) > 1_000);
  }

  @Test
  void memoryBelowTheModuleMinimumTerminates() {
    ExecutionResult r = run(HELLO, grants(LOG_ONLY, 5_000, 1000, 1_000_000_000));
    assertEquals(new Outcome.Terminated(Outcome.Breach.Memory), r.outcome());
  }

  @Test
  void growthPastTheGrantFailsInsideTheGuest() {
    String wat =
        """
        (module
          (memory 1)
          (func (export "run") (result i32)
            (memory.grow (i32.const 4))))
        """;
    // The grant allows 2 pages: growing by 4 returns -1 to the guest.
    ExecutionResult r = run(wat, grants(LOG_ONLY, 5_000, 2 * 65536, 1_000_000_000));
    assertEquals(new Outcome.Failed("entry returned -1"), r.outcome());
  }

  @Test
  void theNodeCapsMemoryBelowAGenerousGrant() {
    HostServices capped = HostServices.none().withMaxUnitMemory(4 * 65536);
    try (Executor strict = new Executor(1, EnergyModel.estimate(10_000), 60_000, capped)) {
      CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(MEMORY_BOMB));
      ExecutionResult r =
          strict.execute(
              new UnitRequest("r", unit, "run", grants(LOG_ONLY, 5_000, 1 << 30, 1_000_000_000)));
      assertEquals(new Outcome.Failed("entry returned 4"), r.outcome());
      assertEquals(4 * 65536, r.memoryPeakBytes());
    }
  }

  @Test
  void trapIsFailedWithTheMessage() {
    String wat = "(module (func (export \"run\") (result i32) unreachable))";
    ExecutionResult r = run(wat, grants(LOG_ONLY, 5_000, 1 << 20, 1_000_000_000));
    Outcome.Failed f = assertInstanceOf(Outcome.Failed.class, r.outcome());
    assertTrue(f.reason().startsWith("trap:"), f.reason());
  }

  @Test
  void compiledOncePerAddress() {
    byte[] wasm = Wat2Wasm.parse(SPIN);
    assertSame(COMPILER.compile(wasm), COMPILER.compile(wasm.clone()));
  }

  /** What compiling the module {@code wat} is refused with. */
  static UnitException refused(String wat) {
    return assertThrows(UnitException.class, () -> COMPILER.compile(Wat2Wasm.parse(wat)));
  }

  @Test
  void badUnitsAreTypedErrors() {
    UnitException notWasm =
        assertThrows(
            UnitException.class,
            () -> COMPILER.compile("not wasm at all".getBytes(StandardCharsets.UTF_8)));
    assertEquals(UnitException.Part.MODULE, notWasm.part());
    assertTrue(notWasm.getMessage().contains("byte 0"), notWasm.getMessage());

    UnitException unknown =
        refused("(module (import \"sandbox\" \"teleport\" (func (param i32) (result i32))))");
    assertEquals(UnitException.Part.IMPORT, unknown.part());
    assertTrue(unknown.getMessage().contains("sandbox.teleport"), unknown.getMessage());

    UnitException ns = refused("(module (import \"env\" \"f\" (func)))");
    assertTrue(ns.getMessage().contains("env.f"), ns.getMessage());

    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(SPIN));
    // The entry is checked once, at admission.
    UnitException entry =
        assertThrows(UnitException.class, () -> UnitCompiler.checkEntry(unit, "main"));
    assertEquals(UnitException.Part.ENTRY, entry.part());
    assertTrue(entry.getMessage().contains("\"main\""), entry.getMessage());
    // A request that skipped admission fails its run; it never escapes the executor.
    ExecutionResult skipped =
        EXECUTOR.execute(
            new UnitRequest("r", unit, "main", grants(LOG_ONLY, 5_000, 1 << 20, 1_000_000_000)));
    assertTrue(skipped.outcome() instanceof Outcome.Failed, skipped.outcome().toString());
  }

  @Test
  void theNextUnitOnAReusedThreadIsNotInterrupted() {
    run(SPIN, grants(LOG_ONLY, 20, 1 << 20, 9_000_000_000_000_000L));
    ExecutionResult after = run(HELLO, grants(LOG_ONLY, 5_000, 1 << 20, 1_000_000_000));
    assertEquals(new Outcome.Completed(), after.outcome());
    assertNotEquals(0, after.hostCalls());
  }

  /** A unit whose entry recurses {@code depth} calls deep (all the way, for a negative depth). */
  static String recursing(int depth) {
    return """
        (module
          (func $down (param i32) (result i32)
            (if (result i32) (i32.eqz (local.get 0))
              (then (i32.const 0))
              (else (call $down (i32.sub (local.get 0) (i32.const 1))))))
          (func (export "run") (result i32) (call $down (i32.const %d))))
        """
        .formatted(depth);
  }

  @Test
  void aDeepButBoundedRecursionCompletesAndAnEndlessOneExhaustsTheStack() {
    Grants g = grants(LOG_ONLY, 60_000, 1 << 20, 9_000_000_000_000_000L);
    // Deeper than a default-sized thread stack holds: a unit thread has a unit's stack.
    assertEquals(new Outcome.Completed(), run(recursing(DEEP), g).outcome());
    // Chicory turns the thread's stack overflow into a trap of its own.
    assertEquals(new Outcome.Failed("trap: call stack exhausted"), run(recursing(-1), g).outcome());
    assertEquals(new Outcome.Completed(), run(HELLO, g).outcome());
  }

  /** A recursion depth that needs more than a default thread stack (checked below). */
  static final int DEEP = 40_000;

  @Test
  void theRecursionCalledDeepDoesNotFitADefaultThreadStack() throws InterruptedException {
    // The guard of the test above: on a default stack the same recursion runs out.
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(recursing(DEEP)));
    Instance instance =
        Instance.builder(unit.module()).withMachineFactory(unit.machineFactory()).build();
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    Thread plain =
        new Thread(
            () -> {
              try {
                instance.export("run").apply();
              } catch (Throwable t) {
                thrown.set(t);
              }
            });
    plain.start();
    plain.join();
    ChicoryException e = assertInstanceOf(ChicoryException.class, thrown.get());
    assertEquals("call stack exhausted", e.getMessage());
  }

  @Test
  void theDaemonsWallClockLimitEndsAUnitThatIsWithinItsBudgets() {
    try (Executor brief = new Executor(1, EnergyModel.estimate(10_000), 100)) {
      CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(SPIN));
      Grants g = grants(LOG_ONLY, 600_000, 1 << 20, 9_000_000_000_000_000L);
      ExecutionResult r = brief.execute(new UnitRequest("r", unit, "run", g));
      assertEquals(new Outcome.Failed("wall-clock limit of the daemon exceeded"), r.outcome());
    }
  }
}
