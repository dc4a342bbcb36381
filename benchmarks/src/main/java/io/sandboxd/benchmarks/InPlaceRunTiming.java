package io.sandboxd.benchmarks;

import com.sun.management.OperatingSystemMXBean;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.EnergyModel;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.executor.UnitRequest;
import io.sandboxd.executor.UnitThread;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What running a unit in place saves (issue 22): a unit (default {@code examples/hello.wasm}) runs
 * under one {@link Executor} from {@code C} callers at once, for a block of {@code --seconds}; the
 * callers are {@link UnitThread}s (the unit runs on its caller's thread) in one block and plain
 * threads (the executor's pool runs it while the caller waits) in the next, alternating, in one
 * JVM. Prints, per caller count and way, the medians over the blocks of runs a second and of the
 * process's CPU time a run (the pool's threads and the watchdog's included).
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.sandboxd.benchmarks.InPlaceRunTiming \
 *     [--callers 1,16] [--blocks 10] [--seconds 2] [--module examples/hello.wasm]
 * </pre>
 */
public final class InPlaceRunTiming {
  private static final OperatingSystemMXBean OS =
      (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  private InPlaceRunTiming() {}

  /** One block's figures. */
  record Block(double runsPerSecond, double cpuMicrosPerRun) {}

  public static void main(String[] args) throws Exception {
    int[] callers = {1, 16};
    int blocks = 10;
    double seconds = 2;
    Path module = Path.of("examples/hello.wasm");
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--callers" ->
            callers = Arrays.stream(args[++i].split(",")).mapToInt(Integer::parseInt).toArray();
        case "--blocks" -> blocks = Integer.parseInt(args[++i]);
        case "--seconds" -> seconds = Double.parseDouble(args[++i]);
        case "--module" -> module = Path.of(args[++i]);
        default -> {
          System.err.println(
              "usage: InPlaceRunTiming [--callers 1,16] [--blocks N] [--seconds S] [--module F]");
          System.exit(2);
        }
      }
    }
    try (UnitCompiler compiler = new UnitCompiler(1);
        Executor executor = new Executor(64, EnergyModel.estimate(10_000), 600_000)) {
      CompiledUnit unit = compiler.compile(Files.readAllBytes(module));
      UnitRequest request = new UnitRequest("timing", unit, "run", BenchSupport.grants(true, true));
      // Warm-up, both ways, not counted: the JIT settles before the first block.
      for (int c : callers) {
        block(executor, request, c, UnitThread.factory("warm-unit-"), 4 * seconds);
        block(executor, request, c, Thread::new, 4 * seconds);
      }
      for (int c : callers) {
        List<Block> inPlace = new ArrayList<>();
        List<Block> onPool = new ArrayList<>();
        for (int b = 0; b < blocks; b++) {
          inPlace.add(block(executor, request, c, UnitThread.factory("caller-"), seconds));
          onPool.add(block(executor, request, c, Thread::new, seconds));
        }
        print(c, "on the pool's threads", onPool);
        print(c, "in place", inPlace);
      }
    }
  }

  /** {@code callers} threads made by {@code threads} run the unit over and over for a block. */
  private static Block block(
      Executor executor, UnitRequest request, int callers, ThreadFactory threads, double seconds)
      throws InterruptedException {
    AtomicLong runs = new AtomicLong();
    CountDownLatch start = new CountDownLatch(1);
    long[] window = new long[1];
    List<Thread> started = new ArrayList<>();
    for (int i = 0; i < callers; i++) {
      Thread t =
          threads.newThread(
              () -> {
                try {
                  start.await();
                } catch (InterruptedException e) {
                  return;
                }
                while (System.nanoTime() - window[0] < 0) {
                  BenchSupport.completed(executor.execute(request));
                  runs.incrementAndGet();
                }
              });
      t.start();
      started.add(t);
    }
    long cpu0 = OS.getProcessCpuTime();
    long t0 = System.nanoTime();
    window[0] = t0 + (long) (seconds * 1e9);
    start.countDown();
    for (Thread t : started) {
      t.join();
    }
    long wall = System.nanoTime() - t0;
    long cpu = OS.getProcessCpuTime() - cpu0;
    long n = Math.max(1, runs.get());
    return new Block(n * 1e9 / wall, cpu / 1e3 / n);
  }

  private static void print(int callers, String way, List<Block> blocks) {
    System.out.printf(
        Locale.ROOT,
        "%2d caller(s), %-22s %9.0f runs/s  %7.1f us CPU a run  (median of %d blocks)%n",
        callers,
        way + ":",
        median(blocks.stream().mapToDouble(Block::runsPerSecond).toArray()),
        median(blocks.stream().mapToDouble(Block::cpuMicrosPerRun).toArray()),
        blocks.size());
  }

  private static double median(double[] values) {
    double[] v = values.clone();
    Arrays.sort(v);
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }
}
