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
 * @param timeout wall time one compilation (parse, validate, compile) may take
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
    Duration timeout) {

  /** Browser-like validation limits, two compilations at once, 60 s each. */
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
        Duration.ofSeconds(60));
  }

  /** These limits with another concurrency and time budget (from the node's configuration). */
  public CompileLimits withBudget(int concurrent, Duration wall) {
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
        wall);
  }
}
