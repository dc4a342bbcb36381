package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.ImportValues;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.wabt.Wat2Wasm;
import com.dylibso.chicory.wasm.types.FunctionType;
import com.dylibso.chicory.wasm.types.ValType;
import io.sandboxd.enforcer.Enforcer;
import java.security.SecureRandom;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Host functions bound after instantiation: one instance serves one run, then another, and each run
 * sees only its own context (log, counts, journal, clock).
 */
class RunBindingTest {
  static final UnitCompiler COMPILER = new UnitCompiler(16);

  // Logs "hello", reads the clock into memory[64..72) and returns the OR of the two statuses.
  static final String UNIT =
      """
      (module
        (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
        (import "sandbox" "clock_now" (func $clock (param i32) (result i32)))
        (memory (export "memory") 1 1)
        (data (i32.const 16) "hello")
        (func (export "run") (result i32)
          (i32.or (call $log (i32.const 16) (i32.const 5)) (call $clock (i32.const 64)))))
      """;

  static RunContext context(String host, long clockNanos) {
    HostServices services = HostServices.none();
    Enforcer enforcer =
        new Enforcer(ExecutorTest.grants(host, 5_000, 1 << 20, 1_000_000), services.execDenylist());
    return new RunContext(
        enforcer,
        () -> clockNanos,
        Executor.CLOCK_CONSTANT_MS,
        new SecureRandom(),
        services,
        Optional.empty(),
        Optional.empty(),
        "0".repeat(64));
  }

  static Instance instantiate(CompiledUnit unit, RunBinding binding) {
    return Instance.builder(unit.module())
        .withImportValues(
            ImportValues.builder().addFunction(SandboxImports.functions(binding)).build())
        .withMachineFactory(unit.machineFactory())
        .withStart(false)
        .build();
  }

  static int run(Instance instance) {
    return (int) instance.export("run").apply()[0];
  }

  @Test
  void anInstanceServesEachBoundRunAndOnlyThatRun() {
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(UNIT));
    RunBinding binding = new RunBinding();
    Instance instance = instantiate(unit, binding);
    RunContext first =
        context("{\"logging\":true,\"clock\":true,\"random\":false,\"inference\":false}", 111);
    RunContext second =
        context("{\"logging\":false,\"clock\":true,\"random\":false,\"inference\":false}", 222);

    binding.bind(first);
    assertEquals(AbiStatus.OK, run(instance));
    binding.release();
    assertEquals(111, instance.memory().readLong(64));

    binding.bind(second);
    // The second run's grant denies logging: it gets DENIED, not the first run's Allow.
    assertEquals(AbiStatus.DENIED, run(instance));
    binding.release();
    assertEquals(222, instance.memory().readLong(64));

    assertEquals("hello\n", first.log());
    assertEquals("", second.log());
    assertEquals(2, first.hostCalls());
    assertEquals(2, second.hostCalls());
    assertEquals(1, first.journal.size());
    assertEquals(1, second.journal.size());
    assertEquals("clock_now", first.journal.entries().get(0).call());
    assertEquals("clock_now", second.journal.entries().get(0).call());
    assertFalse(first.journal.root().equals(second.journal.root()), "each run journals its clock");
  }

  @Test
  void aCallWithNoRunBoundTrapsAndTouchesNoRun() {
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(UNIT));
    RunBinding binding = new RunBinding();
    Instance instance = instantiate(unit, binding);
    RuntimeException unbound = assertThrows(RuntimeException.class, () -> run(instance));
    assertTrue(causes(unbound, RunBinding.UnboundException.class), unbound.toString());

    RunContext ctx =
        context("{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}", 1);
    binding.bind(ctx);
    assertThrows(IllegalStateException.class, () -> binding.bind(ctx));
    assertEquals(AbiStatus.OK, run(instance));
    binding.release();
    assertThrows(RuntimeException.class, () -> run(instance));
    // The trap after release reached no run: the bound run's figures are as it left them.
    assertEquals(2, ctx.hostCalls());
    assertEquals("hello\n", ctx.log());
    // The clock is not granted: its refusal follows from the grants and is not journaled.
    assertEquals(0, ctx.journal.size());
  }

  @Test
  void everyCallIsCountedOnceWhateverItsOutcome() {
    // A FAULT from a bad range, an early INVALID and a journaled answer: one count each.
    String wat =
        """
        (module
          (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
          (import "sandbox" "clock_now" (func $clock (param i32) (result i32)))
          (import "sandbox" "egress" (func $egress (param i32 i32 i32 i32 i32) (result i32)))
          (import "sandbox" "storage_delete" (func $del (param i32 i32) (result i32)))
          (memory 1 1)
          (data (i32.const 16) "{not json")
          (func (export "run") (result i32)
            (drop (call $log (i32.const 65530) (i32.const 100)))
            (drop (call $clock (i32.const 65535)))
            (drop (call $clock (i32.const 64)))
            (drop (call $egress (i32.const 16) (i32.const 9) (i32.const 128) (i32.const 64)
                                (i32.const 200)))
            (drop (call $del (i32.const 65000) (i32.const 1000)))
            (i32.const 0)))
        """;
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(wat));
    RunBinding binding = new RunBinding();
    Instance instance = instantiate(unit, binding);
    RunContext ctx =
        context("{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}", 1);
    binding.bind(ctx);
    run(instance);
    binding.release();
    assertEquals(5, ctx.hostCalls());
    // The one clock read is refused by the grant, which a replay recomputes: nothing journaled.
    assertEquals(0, ctx.journal.size());
  }

  @Test
  void admissionSignaturesComeFromTheAnnotatedMethods() {
    Map<String, FunctionType> generated = new TreeMap<>();
    for (HostFunction f : SandboxImports.functions(new RunBinding())) {
      generated.put(f.name(), f.functionType());
    }
    List<String> abi =
        List.of(
            "clock_now",
            "egress",
            "exec",
            "infer",
            "kv_get",
            "kv_put",
            "log",
            "random_u64",
            "storage_delete",
            "storage_read",
            "storage_write",
            "yield_point");
    assertEquals(abi, List.copyOf(generated.keySet()));
    for (String name : abi) {
      assertNotNull(SandboxImports.signature(name), name);
      assertTrue(generated.get(name).typesMatch(SandboxImports.signature(name)), name);
      assertEquals(List.of(ValType.I32), generated.get(name).returns(), name);
    }
    assertEquals(
        List.of(ValType.I32, ValType.I32, ValType.I64, ValType.I32, ValType.I32, ValType.I32),
        SandboxImports.signature("storage_read").params());
    assertEquals(String.join(", ", abi), SandboxImports.names());
  }

  /** Whether {@code t} or one of its causes is a {@code type}. */
  static boolean causes(Throwable t, Class<?> type) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (type.isInstance(c)) {
        return true;
      }
    }
    return false;
  }
}
