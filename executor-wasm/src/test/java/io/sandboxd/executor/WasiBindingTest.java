package io.sandboxd.executor;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.ImportValues;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.wabt.Wat2Wasm;
import com.dylibso.chicory.wasi.WasiPreview1;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * WASI bound after instantiation: one instance serves one run, then another, each with its own
 * Chicory preview 1 state (environment, its own stdout) and its own counts and journal.
 */
class WasiBindingTest {
  // Writes "hi\n" to stdout, reads the clock into memory[48..56), and returns the environment's
  // variable count (Chicory's environ_sizes_get, taken by name).
  static final String UNIT =
      """
      (module
        (import "wasi_snapshot_preview1" "fd_write"
          (func $write (param i32 i32 i32 i32) (result i32)))
        (import "wasi_snapshot_preview1" "environ_sizes_get"
          (func $envsizes (param i32 i32) (result i32)))
        (import "wasi_snapshot_preview1" "clock_time_get"
          (func $clock (param i32 i64 i32) (result i32)))
        (memory (export "memory") 1 1)
        (data (i32.const 16) "hi\\n")
        (func (export "run") (result i32)
          (i32.store (i32.const 0) (i32.const 16))
          (i32.store (i32.const 4) (i32.const 3))
          (drop (call $write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
          (drop (call $clock (i32.const 0) (i64.const 1) (i32.const 48)))
          (drop (call $envsizes (i32.const 32) (i32.const 36)))
          (i32.load (i32.const 32))))
      """;

  static Instance instantiate(CompiledUnit unit, RunBinding binding) {
    return Instance.builder(unit.module())
        .withImportValues(
            ImportValues.builder()
                .addFunction(SandboxImports.functions(binding))
                .addFunction(WasiImports.functions(binding))
                .build())
        .withMachineFactory(unit.machineFactory())
        .withStart(false)
        .build();
  }

  @Test
  void anInstanceGetsEachRunsWasiStateAtBindTime() {
    CompiledUnit unit = RunBindingTest.COMPILER.compile(Wat2Wasm.parse(UNIT));
    RunBinding binding = new RunBinding();
    Instance instance = instantiate(unit, binding);
    RunContext first =
        RunBindingTest.context(
            "{\"logging\":true,\"clock\":true,\"random\":false,\"inference\":false}", 111);
    RunContext second =
        RunBindingTest.context(
            "{\"logging\":false,\"clock\":true,\"random\":false,\"inference\":false}", 222);

    WasiRun firstWasi = WasiRun.open(first, "first", Map.of("A", "1"));
    try (WasiRun wasi = firstWasi) {
      binding.bind(first, wasi);
      assertEquals(1, RunBindingTest.run(instance));
      binding.release();
    }
    assertEquals(111, instance.memory().readLong(48));
    WasiRun secondWasi = WasiRun.open(second, "second", Map.of("B", "1", "C", "2"));
    try (WasiRun wasi = secondWasi) {
      binding.bind(second, wasi);
      assertEquals(2, RunBindingTest.run(instance));
      binding.release();
    }
    assertEquals(222, instance.memory().readLong(48));

    assertEquals("hi\n", new String(firstWasi.stdio().stdout().bytes(), UTF_8));
    assertEquals(
        0, secondWasi.stdio().stdout().bytes().length, "the second run's grant does not log");
    assertEquals(3, secondWasi.stdio().stdout().written(), "but what it wrote is counted");
    assertEquals("", first.log(), "stdout is not the run log");
    assertTrue(second.log().contains("stdout not kept: host.logging is not granted"), second.log());
    assertEquals(3, first.hostCalls());
    assertEquals(3, second.hostCalls());
    assertEquals(1, first.journal.size());
    assertEquals("clock_now", second.journal.entries().get(0).call());
  }

  @Test
  void aWasiCallWithNoRunOrNoWasiStateBoundTraps() {
    CompiledUnit unit = RunBindingTest.COMPILER.compile(Wat2Wasm.parse(UNIT));
    RunBinding binding = new RunBinding();
    Instance instance = instantiate(unit, binding);
    assertThrows(RuntimeException.class, () -> RunBindingTest.run(instance));
    RunContext ctx =
        RunBindingTest.context(
            "{\"logging\":true,\"clock\":true,\"random\":false,\"inference\":false}", 1);
    binding.bind(ctx);
    RuntimeException e = assertThrows(RuntimeException.class, () -> RunBindingTest.run(instance));
    assertTrue(RunBindingTest.causes(e, RunBinding.UnboundException.class), e.toString());
    assertEquals("", ctx.log());
  }

  @Test
  void brokeredAndChicoryNamesSplitChicorysWasiExactlyWithItsSignatures() {
    Set<String> chicory = new TreeSet<>();
    Map<String, com.dylibso.chicory.wasm.types.FunctionType> chicoryTypes =
        new java.util.HashMap<>();
    try (WasiPreview1 probe = WasiPreview1.builder().build()) {
      for (HostFunction f : probe.toHostFunctions()) {
        chicory.add(f.name());
        chicoryTypes.put(f.name(), f.functionType());
      }
    }
    Set<String> brokered = new TreeSet<>(WasiImports.brokeredNames());
    Set<String> overlap = new HashSet<>(brokered);
    overlap.retainAll(WasiImports.FROM_CHICORY);
    assertEquals(Set.of(), overlap, "a call is brokered or Chicory's, never both");
    Set<String> all = new TreeSet<>(brokered);
    all.addAll(WasiImports.FROM_CHICORY);
    assertEquals(chicory, all, "every WASI call Chicory knows is served");
    Set<String> served = new TreeSet<>();
    for (HostFunction f : WasiImports.functions(new RunBinding())) {
      served.add(f.name());
      assertNotNull(WasiImports.signature(f.name()), f.name());
      assertTrue(
          f.functionType().typesMatch(chicoryTypes.get(f.name())),
          f.name() + ": the typed method's signature is Chicory's");
    }
    assertEquals(chicory, served);
    assertTrue(
        brokered.containsAll(Set.of("path_open", "fd_write", "clock_time_get", "proc_exit")));
  }
}
