package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.Outcome;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class CompileBoundsTest {
  static final Executor EXECUTOR = new Executor(2, EnergyModel.estimate(10_000), 60_000);

  @AfterAll
  static void close() {
    EXECUTOR.close();
  }

  static UnitCompiler compiler() {
    return new UnitCompiler(8);
  }

  /** Runs {@code unit} under a grant of {@code memoryBytes} that logs and has time to spare. */
  static ExecutionResult run(CompiledUnit unit, long memoryBytes) {
    return EXECUTOR.execute(
        new UnitRequest(
            "t",
            unit,
            "run",
            ExecutorTest.grants(ExecutorTest.LOG_ONLY, 5_000, memoryBytes, 1L << 40)));
  }

  @Test
  void fortyLargeTablesAreRefusedAtInstantiationWithoutAllocating() {
    // 40 tables of 10M entries: ~4.8 GB of heap were they allocated; the grant allows 64 KiB.
    CompiledUnit unit = compiler().compile(WasmWriter.tables(40, 10_000_000));
    assertEquals(
        40 * 10_000_000L * InstanceFootprint.TABLE_SLOT_BYTES, unit.footprint().tableBytes());
    ExecutionResult r = run(unit, 65_536);
    assertEquals(new Outcome.Terminated(Outcome.Breach.Memory), r.outcome());
  }

  @Test
  void aTableLargerThanTheTableLimitIsRefusedAtCompile() {
    // Chicory's own validation or ours: either way a typed refusal, before any instance exists.
    assertThrows(UnitException.class, () -> compiler().compile(WasmWriter.tables(1, 10_000_001)));
  }

  @Test
  void smallTablesWithinTheCapRun() {
    CompiledUnit unit = compiler().compile(WasmWriter.tables(2, 1000));
    ExecutionResult r = run(unit, 1 << 20);
    assertEquals(new Outcome.Completed(), r.outcome());
  }

  @Test
  void tableGrowIsPaidFromTheMemoryCap() {
    // No linear memory: the whole 1 MiB cap is left for the table; growing 10M entries must fail.
    String wat =
        """
        (module
          (table 1 funcref)
          (func (export "run") (result i32)
            (table.grow (ref.null func) (i32.const 10000000))))
        """;
    CompiledUnit unit = compiler().compile(Wat2Wasm.parse(wat));
    ExecutionResult r = run(unit, 1 << 20);
    // table.grow returned -1: refused, not allocated.
    assertEquals(new Outcome.Failed("entry returned -1"), r.outcome());
    String small = wat.replace("10000000", "1000");
    ExecutionResult ok = run(compiler().compile(Wat2Wasm.parse(small)), 1 << 20);
    // Returns the old size, 1: a grow within the budget succeeds.
    assertEquals(new Outcome.Failed("entry returned 1"), ok.outcome());
  }

  @Test
  void tooManyLocalsInOneFunctionAreRefusedNamingTheLimit() {
    UnitException e =
        assertThrows(
            UnitException.class, () -> compiler().compile(WasmWriter.manyLocals(2, 25_001)));
    assertEquals(UnitException.Part.LIMIT, e.part());
    assertTrue(e.getMessage().contains("50000 locals"), e.getMessage());
  }

  @Test
  void manyFunctionsOfManyLocalsInATinyModuleAreRefused() {
    byte[] wasm = WasmWriter.functionsWithLocals(40, 50_000);
    UnitException e = assertThrows(UnitException.class, () -> compiler().compile(wasm));
    assertTrue(e.getMessage().contains("may declare at most"), e.getMessage());
  }

  @Test
  void aHugeBrTableIsRefused() {
    UnitException e =
        assertThrows(UnitException.class, () -> compiler().compile(WasmWriter.brTable(70_000)));
    assertTrue(e.getMessage().contains("br_table"), e.getMessage());
  }

  @Test
  void manyBrTablesWithinThePerTableLimitAreRefusedPastTheModuleLimit() {
    byte[][] bodies = new byte[5][];
    Arrays.fill(bodies, WasmWriter.brTableBody(60_000));
    byte[] wasm = WasmWriter.runModule(0, bodies);
    UnitException e = assertThrows(UnitException.class, () -> compiler().compile(wasm));
    assertTrue(e.getMessage().contains("a module may have at most"), e.getMessage());
  }

  @Test
  void exportIndicesOutOfRangeAreModuleErrors() {
    for (long index : new long[] {1, 0xFFFF_FFFFL, 0x7FFF_FFFFL}) {
      byte[] wasm = WasmWriter.runModule(index, WasmWriter.returning(0));
      UnitException e = assertThrows(UnitException.class, () -> compiler().compile(wasm));
      assertTrue(e.getMessage().contains("export 0"), e.getMessage());
    }
  }

  @Test
  void anEntryThatIsAnImportIsAnEntryError() {
    String wat =
        """
        (module
          (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
          (export "run" (func $log))
          (func (export "other") (result i32) (i32.const 0)))
        """;
    CompiledUnit unit = compiler().compile(Wat2Wasm.parse(wat));
    UnitException e = assertThrows(UnitException.class, () -> UnitCompiler.checkEntry(unit, "run"));
    assertEquals(UnitException.Part.ENTRY, e.part());
  }

  @Test
  void compileCpuIsReportedOnceThenTheCacheIsFree() {
    UnitCompiler c = compiler();
    byte[] wasm = WasmWriter.brTable(20_000);
    UnitCompiler.Compilation first = c.compileMetered(wasm);
    UnitCompiler.Compilation second = c.compileMetered(wasm);
    assertTrue(first.cpuNanos() > 0, "first compile cost " + first.cpuNanos());
    assertEquals(0, second.cpuNanos());
  }

  @Test
  void aClosedCompilerRefusesNewModulesAsBusyAndStillAnswersFromItsCache() {
    byte[] kept = WasmWriter.brTable(10);
    byte[] other = WasmWriter.brTable(11);
    UnitCompiler.Compilation compiled;
    try (UnitCompiler c = compiler()) {
      compiled = c.compileMetered(kept);
      c.close();
      ExecutorBusyException e =
          assertThrows(ExecutorBusyException.class, () -> c.compileMetered(other));
      assertTrue(e.getMessage().contains("shut down"), e.getMessage());
      UnitCompiler.Compilation again = c.compileMetered(kept);
      assertEquals(compiled.unit(), again.unit());
      assertEquals(0, again.cpuNanos());
    }
  }

  @Test
  void aCompilePastItsBudgetIsRefusedAndItsSlotIsHeldUntilItEnds() throws Exception {
    UnitCompiler c =
        new UnitCompiler(4, CompileLimits.defaults().withBudget(1, Duration.ofMillis(1)));
    byte[] wasm = WasmWriter.brTable(60_000);
    UnitException e = assertThrows(UnitException.class, () -> c.compileMetered(wasm));
    assertEquals(UnitException.Part.LIMIT, e.part());
    assertTrue(e.getMessage().contains("budget"), e.getMessage());
    // The abandoned compile still holds the only slot: the next one waits its budget, then is
    // told the node is busy, unless the first ended meanwhile.
    RuntimeException next =
        assertThrows(RuntimeException.class, () -> c.compileMetered(WasmWriter.minimal()));
    assertTrue(
        next instanceof ExecutorBusyException || next instanceof UnitException, next.toString());
  }

  static byte[] tinyFunctions(int n) {
    byte[][] bodies = new byte[n][];
    Arrays.fill(bodies, WasmWriter.returning(0));
    return WasmWriter.runModule(0, bodies);
  }

  @Test
  void manyTinyFunctionsPastTheFloorAreRefusedNamingFunctions() {
    // 40,000 functions of 5 bytes: 200 KB of code buys one per 32 bytes past 10,000, not 40,000.
    UnitException e =
        assertThrows(UnitException.class, () -> compiler().compile(tinyFunctions(40_000)));
    assertEquals(UnitException.Part.LIMIT, e.part());
    assertTrue(e.getMessage().contains("functions: 40000 in a code section of"), e.getMessage());
    // As many, each of 40 bytes or more, are admitted: the bound is per byte, not a count.
    assertEquals(CompileLimits.FUNCTIONS_FLOOR, CompileLimits.defaults().maxFunctionsFor(100));
    assertEquals(50_000, CompileLimits.defaults().maxFunctionsFor(50_000L * 32));
  }

  @Test
  void aCallerWithACompileInProgressWaitsForItWhileAnotherCallerGetsTheOtherSlot()
      throws Exception {
    // Two node slots, one per caller; a 1 ms budget so the first compile is abandoned at once
    // while its work goes on (10,000 functions: a hundred ms or more even on a quiet machine, so
    // it still holds its caller's place when the next call comes).
    UnitCompiler c =
        new UnitCompiler(8, CompileLimits.defaults().withBudget(2, Duration.ofMillis(1)));
    assertEquals(
        1, CompileLimits.defaults().withBudget(2, Duration.ofMillis(1)).maxConcurrentPerCaller());
    byte[] slow = tinyFunctions(CompileLimits.FUNCTIONS_FLOOR);
    UnitException first =
        assertThrows(
            UnitException.class,
            () -> c.compileMetered(UnitCompiler.addressOf(slow), slow, "caller a"));
    assertTrue(first.getMessage().contains("budget"), first.getMessage());
    byte[] small = WasmWriter.minimal();
    ExecutorBusyException again =
        assertThrows(
            ExecutorBusyException.class,
            () -> c.compileMetered(UnitCompiler.addressOf(small), small, "caller a"));
    assertTrue(again.getMessage().contains("this caller's 1"), again.getMessage());
    // Another caller is not behind caller a's queue: it gets the node's second slot (and
    // compiles, or runs out of its own short budget compiling: either way not busy).
    try {
      c.compileMetered(UnitCompiler.addressOf(small), small, "caller b");
    } catch (UnitException budget) {
      assertTrue(budget.getMessage().contains("budget"), budget.getMessage());
    }
  }

  @Test
  void theTimeBudgetGrowsWithTheBytesPastTheFirstMiB() {
    CompileLimits limits =
        CompileLimits.defaults().withBudget(1, Duration.ofSeconds(60), Duration.ofSeconds(30));
    long mib = 1L << 20;
    // Small modules, where compile bombs live, keep the base budget.
    assertEquals(Duration.ofSeconds(60), limits.budgetFor(1_000));
    assertEquals(Duration.ofSeconds(60), limits.budgetFor(mib));
    assertEquals(Duration.ofSeconds(75), limits.budgetFor(mib + mib / 2));
    assertEquals(Duration.ofSeconds(60 + 15 * 30), limits.budgetFor(16 * mib));
    // Saturates rather than overflows.
    assertTrue(limits.budgetFor(Long.MAX_VALUE).compareTo(Duration.ofDays(365)) > 0);
  }

  @Test
  void theSqliteShellIsAdmittedByTheDefaultLimits() {
    // A real C program of ~1.7 MB (bin/sqlite-wasm): past the first MiB it gets more time.
    byte[] sqlite = SqliteShellBuild.wasm();
    CompileLimits limits = CompileLimits.defaults();
    assertTrue(
        limits.budgetFor(sqlite.length).compareTo(limits.timeout()) > 0,
        sqlite.length + " bytes get " + limits.budgetFor(sqlite.length));
    UnitCompiler.Compilation c = new UnitCompiler(2, limits).compileMetered(sqlite);
    assertTrue(UnitCompiler.exportNames(c.unit()).contains("_start"));
    assertTrue(c.cpuNanos() > 0);
  }

  @Test
  void executeRefusesWhatCompileAccepted() {
    CompiledUnit unit = compiler().compile(WasmWriter.minimal());
    ExecutionResult r = run(unit, 65_536);
    assertInstanceOf(Outcome.Completed.class, r.outcome());
  }
}
