package io.sandboxd.benchmarks;

import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.wabt.Wat2Wasm;
import com.dylibso.chicory.wasm.types.FunctionType;
import com.dylibso.chicory.wasm.types.ValType;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.EnergyModel;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.InstanceShape;
import io.sandboxd.executor.PreparedInstance;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.executor.UnitRequest;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Host-call overhead (issue 4): a WAT unit calls {@code sandbox.log} (16 bytes) or {@code
 * sandbox.clock_now} {@code n} times in a loop and returns the OR of the statuses.
 *
 * <ul>
 *   <li>{@code executor}: the real {@link Executor} — Enforcer decision per call, log capture (cut
 *       at 64 KiB, after which only the checks and the count remain), the clock journaled (BLAKE3 +
 *       JSON entry per call, merkle root at the end), watchdog and estimator meter.
 *   <li>{@code bare}: the same module and compiled machine factory on plain Chicory, with host
 *       functions of the same signatures that do the same raw work with no Enforcer and no journal:
 *       {@code log} copies the bytes out of guest memory; {@code clock_now} writes the wall clock
 *       (as the executor's does) as 8 little-endian bytes.
 * </ul>
 *
 * Each op is one whole run, so it includes the per-run fixed cost (thread handoff, instance
 * creation, journal root); the {@code n=0} rows measure that cost alone, and the cost of one call
 * is {@code (score(n) - score(0)) / n}. See README.md.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xmx4g"})
public class HostCallBench {
  private static final int MESSAGE_PTR = 16;
  private static final String MESSAGE = "host-call bench!";

  @Param({"log", "clock_now"})
  public String call;

  @Param({"0", "3000", "100000"})
  public int n;

  private Executor executor;
  private CompiledUnit unit;
  private UnitRequest request;
  private InstanceShape shape;
  private HostFunction[] bareImports;
  private final AtomicLong sink = new AtomicLong();

  static String wat(String call, int n) {
    String invoke =
        call.equals("log")
            ? "(call $log (i32.const " + MESSAGE_PTR + ") (i32.const " + MESSAGE.length() + "))"
            : "(call $clock (i32.const 64))";
    return "(module\n"
        + "  (import \"sandbox\" \"log\" (func $log (param i32 i32) (result i32)))\n"
        + "  (import \"sandbox\" \"clock_now\" (func $clock (param i32) (result i32)))\n"
        + "  (memory (export \"memory\") 1 1)\n"
        + "  (data (i32.const "
        + MESSAGE_PTR
        + ") \""
        + MESSAGE
        + "\")\n"
        + "  (func (export \"run\") (result i32)\n"
        + "    (local $i i32) (local $acc i32)\n"
        + "    (block $done\n"
        + "      (loop $l\n"
        + "        (br_if $done (i32.ge_u (local.get $i) (i32.const "
        + n
        + ")))\n"
        + "        (local.set $acc (i32.or (local.get $acc) "
        + invoke
        + "))\n"
        + "        (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
        + "        (br $l)))\n"
        + "    (local.get $acc)))\n";
  }

  @Setup(Level.Trial)
  public void setUp() {
    executor = new Executor(1, EnergyModel.estimate(10_000), 600_000);
    unit = new UnitCompiler(4).compile(Wat2Wasm.parse(wat(call, n)));
    request = new UnitRequest("host-call-bench", unit, "run", BenchSupport.grants(true, true));
    shape = executor.shape(unit, request.grants().compute());
    FunctionType logType = FunctionType.of(List.of(ValType.I32, ValType.I32), List.of(ValType.I32));
    FunctionType clockType = FunctionType.of(List.of(ValType.I32), List.of(ValType.I32));
    bareImports =
        new HostFunction[] {
          new HostFunction(
              "sandbox",
              "log",
              logType,
              (Instance inst, long... a) -> {
                byte[] copy = inst.memory().readBytes((int) a[0], (int) a[1]);
                sink.addAndGet(copy.length);
                return new long[] {0};
              }),
          new HostFunction(
              "sandbox",
              "clock_now",
              clockType,
              (Instance inst, long... a) -> {
                Instant now = Instant.now();
                long nanos = now.getEpochSecond() * 1_000_000_000L + now.getNano();
                inst.memory()
                    .write(
                        (int) a[0],
                        ByteBuffer.allocate(8)
                            .order(ByteOrder.LITTLE_ENDIAN)
                            .putLong(nanos)
                            .array());
                return new long[] {0};
              })
        };
    // Both paths must do the whole job once before they are timed.
    ExecutionResult r = BenchSupport.completed(executor.execute(request));
    long expectedCalls = n;
    if (r.hostCalls() != expectedCalls) {
      throw new IllegalStateException("expected " + n + " host calls, counted " + r.hostCalls());
    }
    BenchSupport.ok(BenchSupport.bareRun(unit, bareImports));
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    executor.close();
  }

  /** The unit through the real executor, Enforcer and journal. */
  @Benchmark
  public ExecutionResult executor() {
    return executor.execute(request);
  }

  /** An instance made in advance, as a warm pool holds it (made outside the measured op). */
  @State(Scope.Thread)
  public static class Warm {
    PreparedInstance instance;

    @Setup(Level.Invocation)
    public void prepare(HostCallBench b) {
      instance = PreparedInstance.prepare(b.unit, b.shape);
    }
  }

  /** The unit through the real executor on a warm instance: no instantiation in the run. */
  @Benchmark
  public ExecutionResult executorWarm(Warm w) {
    return executor.execute(request, w.instance);
  }

  /** The same module on bare Chicory with unenforced, unjournaled host functions. */
  @Benchmark
  public long bare() {
    return BenchSupport.bareRun(unit, bareImports);
  }
}
