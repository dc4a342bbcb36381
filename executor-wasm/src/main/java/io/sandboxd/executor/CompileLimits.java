package io.sandboxd.executor;

import java.time.Duration;

/**
 * What the daemon will parse and compile, and how much of itself compiling may take. The validation
 * limits follow the ones browsers apply to WebAssembly (V8's and SpiderMonkey's JS-API limits), so
 * that any module a browser compiles compiles here too, while a small module cannot declare work
 * that grows faster than its own size.
 *
 * @param maxTypes entries in the type section
 * @param maxImports entries in the import section
 * @param maxExports entries in the export section
 * @param maxFunctions functions defined by the module
 * @param maxTables tables defined by the module
 * @param maxTableEntries a table's initial (and, at run time, grown) size
 * @param maxGlobals globals defined by the module
 * @param maxDataSegments data segments
 * @param maxElementSegments element segments
 * @param maxFunctionBytes one function body's size in bytes
 * @param maxLocalsPerFunction locals one function declares
 * @param localsFloor with the code section's size, the module-wide bound on declared locals: a
 *     module declares at most max(localsFloor, code bytes) locals, so the compiler's work per local
 *     cannot outgrow the module
 * @param maxBrTableEntries targets of one br_table
 * @param maxConcurrent compilations running at once on the node
 * @param timeout wall time one compilation (parse, validate, compile) of a module up to 1 MiB may
 *     take
 * @param timeoutPerMiB wall time added for each MiB a module has past its first: compiling costs
 *     time in proportion to code size, so real programs of many MiB get a budget in proportion,
 *     while a small module (where compile bombs live, past the structural limits above) keeps the
 *     base budget
 */
public record CompileLimits(
    int maxTypes,
    int maxImports,
    int maxExports,
    int maxFunctions,
    int maxTables,
    long maxTableEntries,
    int maxGlobals,
    int maxDataSegments,
    int maxElementSegments,
    int maxFunctionBytes,
    int maxLocalsPerFunction,
    long localsFloor,
    int maxBrTableEntries,
    int maxConcurrent,
    Duration timeout,
    Duration timeoutPerMiB) {
  private static final long MIB = 1L << 20;

  /** Functions any module may define whatever its size (see {@link #maxFunctionsFor(long)}). */
  public static final int FUNCTIONS_FLOOR = 10_000;

  /**
   * Code bytes a module needs, on average, per function past {@link #FUNCTIONS_FLOOR}: Chicory
   * compiles each function to a JVM method at a fixed cost (tens of microseconds) whatever its
   * size, so without this a module of one-instruction functions buys about five times the compile
   * time per byte that real code does (benchmarks/README.md, CompileShapes). Compiled C averages
   * hundreds of bytes per function.
   */
  public static final int CODE_BYTES_PER_FUNCTION = 32;

  /**
   * The functions a module whose code section has {@code codeBytes} bytes may define: the larger of
   * {@link #FUNCTIONS_FLOOR} and one per {@link #CODE_BYTES_PER_FUNCTION} bytes, never more than
   * {@link #maxFunctions()}.
   */
  public long maxFunctionsFor(long codeBytes) {
    return Math.min(maxFunctions, Math.max(FUNCTIONS_FLOOR, codeBytes / CODE_BYTES_PER_FUNCTION));
  }

  /**
   * Compilations one caller may have running at once: half the node's slots, rounded up, so a
   * caller with many modules to compile leaves the other half to everyone else.
   */
  public int maxConcurrentPerCaller() {
    return Math.max(1, (maxConcurrent + 1) / 2);
  }

  /**
   * Browser-like validation limits, two compilations at once, 60 s each plus 120 s per MiB past the
   * first. Chicory compiles real C code at ~3.5 s of CPU per MB (the 1.75 MB SQLite shell: 6 s),
   * but on a 2-CPU machine under a load of 25 that took 61-66 s of wall time, and over 80 s inside
   * a daemon while builds ran alongside (benchmarks/README.md, WasiRunTiming).
   */
  public static CompileLimits defaults() {
    return new CompileLimits(
        1_000_000,
        100_000,
        100_000,
        1_000_000,
        100_000,
        10_000_000,
        1_000_000,
        100_000,
        10_000_000,
        7_654_321,
        50_000,
        65_536,
        65_520,
        2,
        Duration.ofSeconds(60),
        Duration.ofSeconds(120));
  }

  /** These limits with another concurrency and base time budget (the per-MiB budget kept). */
  public CompileLimits withBudget(int concurrent, Duration wall) {
    return withBudget(concurrent, wall, timeoutPerMiB);
  }

  /** These limits with another concurrency and time budget (from the node's configuration). */
  public CompileLimits withBudget(int concurrent, Duration wall, Duration perMiB) {
    return new CompileLimits(
        maxTypes,
        maxImports,
        maxExports,
        maxFunctions,
        maxTables,
        maxTableEntries,
        maxGlobals,
        maxDataSegments,
        maxElementSegments,
        maxFunctionBytes,
        maxLocalsPerFunction,
        localsFloor,
        maxBrTableEntries,
        concurrent,
        wall,
        perMiB);
  }

  /**
   * The wall time compiling a module of {@code moduleBytes} may take: {@link #timeout()}, plus
   * {@link #timeoutPerMiB()} in proportion to the bytes past the first MiB.
   */
  public Duration budgetFor(long moduleBytes) {
    long past = Math.max(0, moduleBytes - MIB);
    long extraMs;
    try {
      extraMs = Math.multiplyExact(timeoutPerMiB.toMillis(), past) / MIB;
    } catch (ArithmeticException e) {
      extraMs = Long.MAX_VALUE / 2;
    }
    return timeout.plusMillis(Math.min(extraMs, Long.MAX_VALUE / 2 - timeout.toMillis()));
  }
}
