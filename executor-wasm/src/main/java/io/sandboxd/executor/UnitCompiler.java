package io.sandboxd.executor;

import com.dylibso.chicory.compiler.MachineFactoryCompiler;
import com.dylibso.chicory.wasm.Parser;
import com.dylibso.chicory.wasm.WasmModule;
import com.dylibso.chicory.wasm.types.Export;
import com.dylibso.chicory.wasm.types.ExternalType;
import com.dylibso.chicory.wasm.types.FunctionImport;
import com.dylibso.chicory.wasm.types.FunctionType;
import com.dylibso.chicory.wasm.types.Import;
import com.dylibso.chicory.wasm.types.MemoryLimits;
import com.dylibso.chicory.wasm.types.OpCode;
import com.dylibso.chicory.wasm.types.TableLimits;
import com.dylibso.chicory.wasm.types.ValType;
import io.sandboxd.attest.Blake3;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Parses, validates and compiles modules with Chicory's runtime compiler, once per module address:
 * compiling costs ~100 ms, a new instance of a compiled module well under one. Compiling is bounded
 * by {@link CompileLimits}: declarations past browser-like limits are refused before Chicory reads
 * them, at most {@code maxConcurrent} compilations run at once, each within a wall-time budget, and
 * the CPU time each took is reported so that the run which needed it pays for it.
 */
public final class UnitCompiler implements AutoCloseable {
  private static final byte[] WASM_MAGIC = {0x00, 0x61, 0x73, 0x6d};
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  private final FactoryCache cache;
  private final CompileLimits limits;
  private final Semaphore permits;
  private final ExecutorService workers;

  public UnitCompiler(int maxCached) {
    this(maxCached, CompileLimits.defaults());
  }

  public UnitCompiler(int maxCached, CompileLimits limits) {
    this(new FactoryCache(maxCached), limits);
  }

  /** A compiler that keeps what it compiled in {@code cache} (bounded, least recently used out). */
  public UnitCompiler(FactoryCache cache, CompileLimits limits) {
    this.cache = cache;
    this.limits = limits;
    this.permits = new Semaphore(limits.maxConcurrent(), true);
    AtomicInteger n = new AtomicInteger();
    // Unbounded in threads only in appearance: a thread runs only while it holds a permit.
    this.workers =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "compile-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
  }

  /** A compiled unit, and the CPU time compiling it took now (0 when it came from the cache). */
  public record Compilation(CompiledUnit unit, long cpuNanos) {}

  /** The module address: BLAKE3-256 of the module bytes as submitted. */
  public static String addressOf(byte[] wasm) {
    return Blake3.hex(wasm);
  }

  /** Validates and compiles {@code wasm}, or returns the compiled unit of the same address. */
  public CompiledUnit compile(byte[] wasm) {
    return compileMetered(wasm).unit();
  }

  /**
   * Validates and compiles {@code wasm} within the limits, or returns the cached unit of the same
   * address at no cost.
   *
   * @throws UnitException when the module is malformed, exceeds a limit or its time budget
   * @throws ExecutorBusyException when every compile slot stayed busy for the whole time budget
   */
  public Compilation compileMetered(byte[] wasm) {
    return compileMetered(addressOf(wasm), wasm);
  }

  /**
   * As {@link #compileMetered(byte[])} for bytes whose address the caller has already established
   * (the module store verifies it on every read), so they are not hashed again.
   */
  public Compilation compileMetered(String address, byte[] wasm) {
    return compileMetered(address, wasm, null);
  }

  /**
   * As {@link #compileMetered(String, byte[])} for {@code caller} (any key that tells callers
   * apart; null for the node's own work): the caller first waits for a place among its own share of
   * the slots ({@link CompileLimits#maxConcurrentPerCaller()}), so that its further modules queue
   * behind its own, never ahead of another caller's.
   */
  public Compilation compileMetered(String address, byte[] wasm, Object caller) {
    java.util.Optional<CompiledUnit> hit = cache.get(address);
    if (hit.isPresent()) {
      return new Compilation(hit.get(), 0);
    }
    long budgetMs = limits.budgetFor(wasm.length).toMillis();
    long startNanos = System.nanoTime();
    if (caller == null) {
      return compileWithin(address, wasm, budgetMs, startNanos, () -> {});
    }
    Share share = shares.compute(caller, (k, v) -> v == null ? new Share() : v.join());
    java.util.concurrent.atomic.AtomicBoolean ended =
        new java.util.concurrent.atomic.AtomicBoolean();
    Runnable leave =
        () -> {
          if (ended.compareAndSet(false, true)) {
            shares.computeIfPresent(caller, (k, v) -> v.leave() ? null : v);
          }
        };
    acquire(
        share.permits,
        budgetMs,
        leave,
        "node busy: this caller's "
            + limits.maxConcurrentPerCaller()
            + " compilation(s) stayed in progress for "
            + budgetMs
            + " ms");
    // The caller's place is held until its compilation really ends (abandoned or not), as the
    // node's slot is: a caller cannot start more by giving up on those it started.
    return compileWithin(
        address,
        wasm,
        budgetMs,
        startNanos,
        () -> {
          share.permits.release();
          leave.run();
        });
  }

  /**
   * Takes one of {@code slots} within {@code waitMs}; when none frees up in time (or the wait is
   * interrupted) runs {@code giveUp} and refuses as busy, with {@code busy} on a timeout.
   */
  private static void acquire(Semaphore slots, long waitMs, Runnable giveUp, String busy) {
    try {
      if (!slots.tryAcquire(waitMs, TimeUnit.MILLISECONDS)) {
        giveUp.run();
        throw new ExecutorBusyException(busy, null);
      }
    } catch (InterruptedException e) {
      giveUp.run();
      Thread.currentThread().interrupt();
      throw new ExecutorBusyException("interrupted while waiting to compile", e);
    }
  }

  /** One caller's compile slots, and how many of its calls hold or wait for them. */
  private final class Share {
    final Semaphore permits = new Semaphore(limits.maxConcurrentPerCaller(), true);
    int users = 1;

    Share join() {
      users++;
      return this;
    }

    /** True when no call of the caller is left (the share is dropped). */
    boolean leave() {
      return --users == 0;
    }
  }

  private final java.util.concurrent.ConcurrentHashMap<Object, Share> shares =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * Waits for a node slot within what is left of the budget, compiles, and runs {@code ended} once
   * when the compilation really ends (or never started).
   */
  private Compilation compileWithin(
      String address, byte[] wasm, long budgetMs, long startNanos, Runnable ended) {
    long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    long leftMs = Math.max(1, budgetMs - waited);
    acquire(
        permits,
        leftMs,
        ended,
        "node busy: "
            + limits.maxConcurrent()
            + " compilations stayed in progress for "
            + budgetMs
            + " ms");
    AtomicLong cpu = new AtomicLong();
    Future<CompiledUnit> job;
    try {
      job =
          workers.submit(
              () -> {
                long t0 = THREADS.getCurrentThreadCpuTime();
                try {
                  return build(address, wasm, limits);
                } finally {
                  cpu.set(THREADS.getCurrentThreadCpuTime() - t0);
                  // Held until the work really ends, abandoned or not: compile slots stay bounded.
                  permits.release();
                  ended.run();
                }
              });
    } catch (RejectedExecutionException e) {
      permits.release();
      ended.run();
      throw new ExecutorBusyException("compiler shut down", e);
    }
    CompiledUnit unit;
    try {
      unit = job.get(budgetMs, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      job.cancel(true);
      throw new UnitException(
          UnitException.Part.LIMIT,
          "module: compiling took longer than the node's budget of "
              + budgetMs
              + " ms for a module of "
              + wasm.length
              + " bytes",
          e);
    } catch (InterruptedException e) {
      job.cancel(true);
      Thread.currentThread().interrupt();
      throw new ExecutorBusyException("interrupted while compiling", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof UnitException u) {
        throw u;
      }
      throw new UnitException(
          UnitException.Part.MODULE, "module: failed to compile: " + describe(e.getCause()), e);
    }
    return new Compilation(cache.put(unit), cpu.get());
  }

  /**
   * Lets its compile threads end now instead of after their idle minute; a compile asked for
   * afterwards is refused as busy ("compiler shut down"). Cached factories stay usable.
   */
  @Override
  public void close() {
    workers.shutdown();
  }

  /** The compiled factories this compiler keeps, by module address. */
  public FactoryCache factories() {
    return cache;
  }

  private static String describe(Throwable t) {
    String m = t.getMessage();
    return m == null || m.isBlank() ? t.getClass().getSimpleName() : m;
  }

  static CompiledUnit build(String address, byte[] wasm, CompileLimits limits) {
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
    ModuleScan.check(wasm, limits);
    WasmModule module;
    try {
      module = Parser.parse(wasm);
    } catch (RuntimeException | StackOverflowError e) {
      // Chicory reports malformed input with many exception types (NullPointerException among
      // them): whatever it throws while reading submitted bytes is the module's fault.
      throw new UnitException(
          UnitException.Part.MODULE, "module: not a valid WebAssembly module: " + describe(e), e);
    }
    try {
      checkImports(module);
      checkExports(module);
      InstanceFootprint footprint = footprint(module, limits);
      checkBranchTables(module, wasm, limits);
      int declaredMax = MemoryLimits.MAX_PAGES;
      int initial = 0;
      if (module.memorySection().isPresent() && module.memorySection().get().memoryCount() > 0) {
        MemoryLimits memory = module.memorySection().get().getMemory(0).limits();
        declaredMax = memory.maximumPages();
        initial = memory.initialPages();
      }
      return new CompiledUnit(
          address, module, MachineFactoryCompiler.compile(module), declaredMax, initial, footprint);
    } catch (UnitException e) {
      throw e;
    } catch (RuntimeException | StackOverflowError e) {
      throw new UnitException(
          UnitException.Part.MODULE, "module: failed to compile: " + describe(e), e);
    } catch (OutOfMemoryError e) {
      throw new UnitException(
          UnitException.Part.LIMIT, "module: too large to compile on this node's heap", e);
    }
  }

  /** Tables are bounded by the table-size limit; the rest of what an instance holds is sized. */
  private static InstanceFootprint footprint(WasmModule module, CompileLimits limits) {
    var tables = module.tableSection();
    List<Long> mins = new ArrayList<>();
    List<Long> maxes = new ArrayList<>();
    for (int i = 0; i < tables.tableCount(); i++) {
      TableLimits t = tables.getTable(i).limits();
      if (t.min() > limits.maxTableEntries()) {
        throw new UnitException(
            UnitException.Part.LIMIT,
            "module: table "
                + i
                + " starts with "
                + t.min()
                + " entries; the limit is "
                + limits.maxTableEntries());
      }
      mins.add(t.min());
      maxes.add(Math.min(t.max(), limits.maxTableEntries()));
    }
    return new InstanceFootprint(mins, maxes, module.globalSection().globalCount());
  }

  /**
   * One br_table may have {@code maxBrTableEntries} targets, a module four times that or a quarter
   * of its size in bytes: compiling br_tables costs far more per byte than other code.
   */
  private static void checkBranchTables(WasmModule module, byte[] wasm, CompileLimits limits) {
    var code = module.codeSection();
    long total = 0;
    long maxTotal = Math.max(4L * limits.maxBrTableEntries(), wasm.length / 4);
    for (int f = 0; f < code.functionBodyCount(); f++) {
      for (var ins : code.getFunctionBody(f).instructions()) {
        if (ins.opcode() != OpCode.BR_TABLE) {
          continue;
        }
        total += ins.operandCount() - 1;
        if (total > maxTotal) {
          throw new UnitException(
              UnitException.Part.LIMIT,
              "module: br_tables up to function "
                  + f
                  + " have "
                  + total
                  + " targets; a module may have at most "
                  + maxTotal);
        }
        if (ins.operandCount() - 1 > limits.maxBrTableEntries()) {
          throw new UnitException(
              UnitException.Part.LIMIT,
              "module: function "
                  + f
                  + " has a br_table of "
                  + (ins.operandCount() - 1)
                  + " targets; the limit is "
                  + limits.maxBrTableEntries());
        }
      }
    }
  }

  /** Every export names something the module has (Chicory does not check indices). */
  private static void checkExports(WasmModule module) {
    var exports = module.exportSection();
    int functions =
        module.importSection().count(ExternalType.FUNCTION)
            + module.functionSection().functionCount();
    int memories = module.memorySection().map(m -> m.memoryCount()).orElse(0);
    for (int i = 0; i < exports.exportCount(); i++) {
      Export e = exports.getExport(i);
      long count =
          switch (e.exportType()) {
            case FUNCTION -> functions;
            case TABLE -> module.tableSection().tableCount();
            case MEMORY -> memories;
            case GLOBAL -> module.globalSection().globalCount();
            default -> Long.MAX_VALUE;
          };
      long index = Integer.toUnsignedLong(e.index());
      if (index >= count) {
        throw new UnitException(
            UnitException.Part.MODULE,
            "module: export "
                + i
                + " (\""
                + e.name()
                + "\") names "
                + e.exportType().name().toLowerCase(java.util.Locale.ROOT)
                + " "
                + index
                + "; the module has "
                + count);
      }
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
  public static void checkEntry(CompiledUnit unit, String entry) {
    var exports = unit.module().exportSection();
    for (int i = 0; i < exports.exportCount(); i++) {
      Export e = exports.getExport(i);
      if (e.name().equals(entry)) {
        if (e.exportType() != ExternalType.FUNCTION) {
          throw new UnitException(
              UnitException.Part.ENTRY, "entry \"" + entry + "\": export is not a function");
        }
        int importedFns = unit.module().importSection().count(ExternalType.FUNCTION);
        long defined = Integer.toUnsignedLong(e.index()) - importedFns;
        if (defined < 0 || defined >= unit.module().functionSection().functionCount()) {
          throw new UnitException(
              UnitException.Part.ENTRY,
              "entry \""
                  + entry
                  + "\": export names function "
                  + Integer.toUnsignedLong(e.index())
                  + ", which the module imports or does not have; the entry must be a function"
                  + " the module defines");
        }
        int typeIdx = unit.module().functionSection().getFunctionType((int) defined);
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

  /** Whether a compiled unit imports WASI: only then can it read argv and stdin or write stdio. */
  public static boolean usesWasi(CompiledUnit unit) {
    return WasiImports.imports(unit.module());
  }
}
