package io.sandboxd.executor;

import com.dylibso.chicory.compiler.MachineFactoryCompiler;
import com.dylibso.chicory.wasm.ChicoryException;
import com.dylibso.chicory.wasm.Parser;
import com.dylibso.chicory.wasm.WasmModule;
import com.dylibso.chicory.wasm.types.Export;
import com.dylibso.chicory.wasm.types.ExternalType;
import com.dylibso.chicory.wasm.types.FunctionImport;
import com.dylibso.chicory.wasm.types.FunctionType;
import com.dylibso.chicory.wasm.types.Import;
import com.dylibso.chicory.wasm.types.MemoryLimits;
import com.dylibso.chicory.wasm.types.ValType;
import io.sandboxd.attest.Blake3;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Parses, validates and compiles modules with Chicory's runtime compiler, once per module address:
 * compiling costs ~100 ms, a new instance of a compiled module well under one.
 */
public final class UnitCompiler {
  private static final byte[] WASM_MAGIC = {0x00, 0x61, 0x73, 0x6d};

  private final Map<String, CompiledUnit> cache = new ConcurrentHashMap<>();
  private final int maxCached;

  public UnitCompiler(int maxCached) {
    this.maxCached = maxCached;
  }

  /** The module address: BLAKE3-256 of the module bytes as submitted. */
  public static String addressOf(byte[] wasm) {
    return Blake3.hex(wasm);
  }

  /** Validates and compiles {@code wasm}, or returns the compiled unit of the same address. */
  public CompiledUnit compile(byte[] wasm) {
    String address = addressOf(wasm);
    CompiledUnit hit = cache.get(address);
    if (hit != null) {
      return hit;
    }
    CompiledUnit unit = build(address, wasm);
    if (cache.size() >= maxCached) {
      // A simple bound: drop everything rather than grow without limit.
      cache.clear();
    }
    CompiledUnit raced = cache.putIfAbsent(address, unit);
    return raced != null ? raced : unit;
  }

  private static CompiledUnit build(String address, byte[] wasm) {
    if (wasm.length < 8) {
      throw new UnitException(
          UnitException.Part.MODULE,
          "module: " + wasm.length + " bytes is too short to be a WebAssembly module");
    }
    for (int i = 0; i < 4; i++) {
      if (wasm[i] != WASM_MAGIC[i]) {
        throw new UnitException(
            UnitException.Part.MODULE,
            "module: byte "
                + i
                + " is 0x"
                + Integer.toHexString(wasm[i] & 0xff)
                + "; a WebAssembly module starts with \\0asm");
      }
    }
    WasmModule module;
    try {
      module = Parser.parse(wasm);
    } catch (ChicoryException | IllegalArgumentException | IndexOutOfBoundsException e) {
      throw new UnitException(
          UnitException.Part.MODULE,
          "module: not a valid WebAssembly module: " + e.getMessage(),
          e);
    }
    checkImports(module);
    int declaredMax = MemoryLimits.MAX_PAGES;
    int initial = 0;
    if (module.memorySection().isPresent() && module.memorySection().get().memoryCount() > 0) {
      MemoryLimits limits = module.memorySection().get().getMemory(0).limits();
      declaredMax = limits.maximumPages();
      initial = limits.initialPages();
    }
    try {
      return new CompiledUnit(
          address, module, MachineFactoryCompiler.compile(module), declaredMax, initial);
    } catch (ChicoryException | IllegalArgumentException | IllegalStateException e) {
      throw new UnitException(
          UnitException.Part.MODULE, "module: failed to compile: " + e.getMessage(), e);
    }
  }

  private static void checkImports(WasmModule module) {
    var section = module.importSection();
    for (int i = 0; i < section.importCount(); i++) {
      Import imp = section.getImport(i);
      String name = imp.module() + "." + imp.name();
      if (!(imp instanceof FunctionImport fi)) {
        throw new UnitException(
            UnitException.Part.IMPORT,
            "import "
                + name
                + ": only function imports are supported (got "
                + imp.importType()
                + ")");
      }
      boolean wasi = imp.module().equals(WasiImports.NAMESPACE);
      if (!wasi && !imp.module().equals(SandboxImports.NAMESPACE)) {
        throw new UnitException(
            UnitException.Part.IMPORT,
            "import "
                + name
                + ": unknown namespace \""
                + imp.module()
                + "\"; units may import"
                + " from \""
                + SandboxImports.NAMESPACE
                + "\" or \""
                + WasiImports.NAMESPACE
                + "\"");
      }
      FunctionType expected =
          wasi ? WasiImports.signature(imp.name()) : SandboxImports.signature(imp.name());
      if (expected == null) {
        throw new UnitException(
            UnitException.Part.IMPORT,
            "import "
                + name
                + ": unknown import; this daemon provides "
                + (wasi ? WasiImports.names() : SandboxImports.names()));
      }
      FunctionType actual = module.typeSection().getType(fi.typeIndex());
      if (!actual.typesMatch(expected)) {
        throw new UnitException(
            UnitException.Part.IMPORT,
            "import " + name + ": signature " + actual + " does not match " + expected);
      }
    }
  }

  /**
   * Checks that {@code entry} is an exported function taking nothing and returning i32 or nothing.
   */
  static void checkEntry(CompiledUnit unit, String entry) {
    var exports = unit.module().exportSection();
    for (int i = 0; i < exports.exportCount(); i++) {
      Export e = exports.getExport(i);
      if (e.name().equals(entry)) {
        if (e.exportType() != ExternalType.FUNCTION) {
          throw new UnitException(
              UnitException.Part.ENTRY, "entry \"" + entry + "\": export is not a function");
        }
        int importedFns = unit.module().importSection().count(ExternalType.FUNCTION);
        int typeIdx = unit.module().functionSection().getFunctionType(e.index() - importedFns);
        FunctionType t = unit.module().typeSection().getType(typeIdx);
        boolean okReturn =
            t.returns().isEmpty()
                || (t.returns().size() == 1 && t.returns().get(0).equals(ValType.I32));
        if (!t.params().isEmpty() || !okReturn) {
          throw new UnitException(
              UnitException.Part.ENTRY,
              "entry \""
                  + entry
                  + "\": must take no parameters and return i32 or nothing, has "
                  + t);
        }
        return;
      }
    }
    throw new UnitException(
        UnitException.Part.ENTRY, "entry \"" + entry + "\": the module exports no such function");
  }

  /** The names of every export of a compiled unit. */
  public static List<String> exportNames(CompiledUnit unit) {
    var exports = unit.module().exportSection();
    return java.util.stream.IntStream.range(0, exports.exportCount())
        .mapToObj(i -> exports.getExport(i).name())
        .toList();
  }
}
