package io.sandboxd.benchmarks;

import com.dylibso.chicory.runtime.ImportValues;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.wasi.WasiExitException;
import com.dylibso.chicory.wasi.WasiOptions;
import com.dylibso.chicory.wasi.WasiPreview1;
import com.dylibso.chicory.wasi.WasiPreview1_ModuleFactory;
import io.sandboxd.executor.CompileLimits;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.EnergyModel;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.executor.UnitRequest;
import io.sandboxd.metering.Attribution;
import io.sandboxd.metering.DiscoveredMeters;
import io.sandboxd.metering.MeterDiscovery;
import io.sandboxd.metering.MeteringConfig;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Where a run's time goes, for real-sized modules (issue 16 items 4 and 5). For each module: the
 * cold compile (first in this JVM) and a warm one (wall, CPU, bytes allocated), a bare Chicory
 * instantiation, a near-empty run on bare Chicory (instance + entry on this thread) and the same
 * run under the {@link Executor} (its wall time against the guest CPU time it reports). Medians of
 * {@code --runs}; every ratio is against a baseline measured in the same JVM, one after the other.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.sandboxd.benchmarks.WasiRunTiming \
 *     [--runs 30] [--recompile] [--big-mib 16] [FILE.wasm ...]
 * </pre>
 *
 * Without files it times the SQLite shell that {@code bin/sqlite-wasm} builds (pass its path) or,
 * with {@code --big-mib N}, a generated module of N MiB of code ({@link BigModule}). The entry is
 * {@code _start} when the module exports it (a WASI command: SQLite reads its empty stdin and
 * exits), else {@code run}.
 */
public final class WasiRunTiming {
  private WasiRunTiming() {}

  public static void main(String[] args) throws Exception {
    int runs = 30;
    boolean recompile = false;
    List<String> files = new ArrayList<>();
    List<Integer> bigMib = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--runs" -> runs = Integer.parseInt(args[++i]);
        case "--big-mib" -> bigMib.add(Integer.parseInt(args[++i]));
        case "--recompile" -> recompile = true;
        default -> files.add(args[i]);
      }
    }
    System.out.printf(
        Locale.ROOT,
        "JVM %s, %d CPUs, max heap %d MiB; medians of %d runs%n",
        System.getProperty("java.version"),
        Runtime.getRuntime().availableProcessors(),
        Runtime.getRuntime().maxMemory() >> 20,
        runs);
    for (String f : files) {
      time(Path.of(f).getFileName().toString(), Files.readAllBytes(Path.of(f)), runs, recompile);
    }
    for (int mib : bigMib) {
      time("generated " + mib + " MiB", BigModule.generate((long) mib << 20, 16), runs, recompile);
    }
  }

  private static void time(String name, byte[] wasm, int runs, boolean recompile) {
    System.out.printf(Locale.ROOT, "%n== %s: %.2f MB%n", name, wasm.length / 1e6);
    CompileLimits generous = CompileLimits.defaults().withBudget(1, Duration.ofHours(1));
    Compiled cold = compile(wasm, generous);
    System.out.printf(
        Locale.ROOT,
        "compile, cold:   %8.1f ms wall  %8.1f ms CPU  %6.0f MB allocated  (%.2f s/MB of module)%n",
        ms(cold.wallNanos),
        ms(cold.cpuNanos),
        cold.allocated / 1e6,
        cold.wallNanos / 1e9 / (wasm.length / 1e6));
    CompiledUnit unit = cold.unit;
    if (recompile) {
      Compiled warm = compile(wasm, generous);
      System.out.printf(
          Locale.ROOT,
          "compile, again:  %8.1f ms wall  %8.1f ms CPU  %6.0f MB allocated%n",
          ms(warm.wallNanos),
          ms(warm.cpuNanos),
          warm.allocated / 1e6);
    }
    boolean command = UnitCompiler.exportNames(unit).contains("_start");
    String entry = command ? "_start" : "run";

    long firstInstance = nanos(() -> bareInstance(unit));
    long[] instantiate = new long[runs];
    long[] bare = new long[runs];
    long[] bareTty = new long[runs];
    long[] wall = new long[runs];
    long[] cpu = new long[runs];
    long[] overhead = new long[runs];
    long[] caller = new long[runs];
    long[] process = new long[runs];
    // Metered as the daemon meters: attributed from the discovered meters (the estimator where
    // there is no RAPL), sampled every second.
    MeteringConfig config = MeteringConfig.defaults();
    try (DiscoveredMeters meters = MeterDiscovery.discover(config);
        Attribution attribution = Attribution.start(meters, config);
        Executor executor = new Executor(1, EnergyModel.attributed(attribution), 600_000)) {
      for (int i = 0; i < runs; i++) {
        instantiate[i] = nanos(() -> bareInstance(unit));
        bare[i] = nanos(() -> bareRun(unit, entry, false));
        bareTty[i] = nanos(() -> bareRun(unit, entry, true));
        long p0 = PROCESS.getProcessCpuTime();
        long c0 = ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
        ExecutionResult r =
            executor.execute(
                new UnitRequest("timing-" + i, unit, entry, BenchSupport.grants(true, false)));
        caller[i] = ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() - c0;
        process[i] = PROCESS.getProcessCpuTime() - p0;
        wall[i] = r.wallNanos();
        cpu[i] = r.cpuTimeNanos();
        overhead[i] = r.wallNanos() - r.cpuTimeNanos();
        if (i == 0) {
          System.out.println("executor outcome: " + r.outcome());
        }
      }
    }
    System.out.printf(
        Locale.ROOT,
        "per executor run: caller thread CPU %.2f ms, process CPU %.2f ms (median)%n",
        ms(median(caller)),
        ms(median(process)));
    System.out.printf(Locale.ROOT, "instantiate, first:   %8.2f ms%n", ms(firstInstance));
    System.out.printf(Locale.ROOT, "instantiate (bare):   %8.2f ms%n", ms(median(instantiate)));
    System.out.printf(
        Locale.ROOT,
        "run %s (bare):    %8.2f ms wall; with stdio as terminals (Chicory's default) %8.2f ms%n",
        entry,
        ms(median(bare)),
        ms(median(bareTty)));
    System.out.printf(
        Locale.ROOT,
        "run %s (executor): %8.2f ms wall, %6.2f ms guest CPU: wall - CPU = %6.2f ms,"
            + " wall/CPU = %.1fx, executor/bare = %.2fx%n",
        entry,
        ms(median(wall)),
        ms(median(cpu)),
        ms(median(overhead)),
        (double) median(wall) / Math.max(1, median(cpu)),
        (double) median(wall) / Math.max(1, median(bare)));
  }

  static final com.sun.management.OperatingSystemMXBean PROCESS =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  private record Compiled(CompiledUnit unit, long wallNanos, long cpuNanos, long allocated) {}

  private static Compiled compile(byte[] wasm, CompileLimits limits) {
    var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long alloc0 = totalAllocated(threads);
    long t0 = System.nanoTime();
    UnitCompiler.Compilation c = new UnitCompiler(2, limits).compileMetered(wasm);
    long wall = System.nanoTime() - t0;
    return new Compiled(c.unit(), wall, c.cpuNanos(), totalAllocated(threads) - alloc0);
  }

  /** Bytes allocated by every live thread so far (the compile runs on a pool thread). */
  private static long totalAllocated(com.sun.management.ThreadMXBean threads) {
    long[] ids = threads.getAllThreadIds();
    long sum = 0;
    for (long b : threads.getThreadAllocatedBytes(ids)) {
      sum += Math.max(0, b);
    }
    return sum;
  }

  private static Instance bareInstance(CompiledUnit unit) {
    return bareInstance(unit, false);
  }

  /** A new instance on plain Chicory with its WASI, stdio declared as terminals or not. */
  private static Instance bareInstance(CompiledUnit unit, boolean tty) {
    WasiPreview1 wasi =
        WasiPreview1.builder()
            .withOptions(
                WasiOptions.builder()
                    .withStdin(InputStream.nullInputStream(), tty)
                    .withStdout(OutputStream.nullOutputStream(), tty)
                    .withStderr(OutputStream.nullOutputStream(), tty)
                    .withArguments(List.of("m"))
                    .build())
            .build();
    return Instance.builder(unit.module())
        .withImportValues(
            ImportValues.builder()
                .addFunction(WasiPreview1_ModuleFactory.toHostFunctions(wasi))
                .build())
        .withMachineFactory(unit.machineFactory())
        .withStart(false)
        .build();
  }

  private static void bareRun(CompiledUnit unit, String entry, boolean tty) {
    try {
      bareInstance(unit, tty).export(entry).apply();
    } catch (WasiExitException e) {
      // proc_exit: the run ended
    }
  }

  private static long nanos(Runnable r) {
    long t0 = System.nanoTime();
    r.run();
    return System.nanoTime() - t0;
  }

  private static long median(long[] v) {
    long[] s = v.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }

  private static double ms(long nanos) {
    return nanos / 1e6;
  }
}
