package io.sandboxd.executor;

import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.runtime.Machine;
import com.dylibso.chicory.wasm.WasmModule;
import java.util.function.Function;

/**
 * A validated module compiled to JVM bytecode once, keyed by its address (BLAKE3 of the bytes);
 * instances made from it share the compiled machine.
 */
public record CompiledUnit(
    String address,
    WasmModule module,
    Function<Instance, Machine> machineFactory,
    int declaredMaxPages,
    int initialPages,
    InstanceFootprint footprint) {}
