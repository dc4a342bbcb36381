package io.sandboxd.benchmarks;

import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.runtime.Memory;
import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.Blake3;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.InstanceSnapshot;
import io.sandboxd.executor.SnapshotStore;
import io.sandboxd.executor.UnitCompiler;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Suspend and resume of durable runs (issue 12), for {@code mib} MiB of touched linear memory
 * (every page non-zero and distinct, so nothing dedupes within a snapshot).
 *
 * <ul>
 *   <li>{@code hash}: the baseline, BLAKE3-256 of the same touched pages (already copied out): the
 *       physical bound of a content-addressed snapshot.
 *   <li>{@code suspend}: {@link InstanceSnapshot#capture} + {@link SnapshotStore#put} into an empty
 *       store (every blob written and fsynced, directories fsynced).
 *   <li>{@code capture}: the CPU part of {@code suspend} alone (copy out, zero test, hash).
 *   <li>{@code resume}: {@link SnapshotStore#load} (every blob read and verified) + {@link
 *       InstanceSnapshot#restore} into a fresh instance (made outside the measured op).
 *   <li>{@code suspendAgain}: 1% of the pages touched again (outside the op), then capture against
 *       the previous suspend + put into the store that holds it: only changed pages are written.
 * </ul>
 *
 * Bytes on disk per case and the incremental/first byte ratio are printed at the end of each trial
 * (lines starting {@code SnapshotBench bytes}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xmx6g"})
public class SnapshotBench {
  @Param({"1", "16", "256"})
  public int mib;

  private CompiledUnit unit;
  private Instance instance;
  private byte[][] pages;
  private Path root;
  private Path storeDir;
  private SnapshotStore store;
  private InstanceSnapshot first;
  private InstanceSnapshot previous;
  private String firstAddress;
  private long firstBytes;
  private Instance target;
  private long seed = 1;
  private long lastIncrementalBytes = -1;
  private int round;

  static String wat(int pages) {
    // touch(from, step, seed): one distinct non-zero i64 at the start of every step-th page.
    return "(module (memory (export \"memory\") "
        + pages
        + " "
        + pages
        + ")"
        + " (func (export \"touch\") (param $p i32) (param $step i32) (param $seed i64)"
        + "  (block $end (loop $l"
        + "   (br_if $end (i32.ge_u (local.get $p) (i32.const "
        + pages
        + ")))"
        + "   (i64.store (i32.mul (local.get $p) (i32.const 65536))"
        + "     (i64.or (i64.const 1) (i64.mul (i64.const 0x9E3779B97F4A7C15)"
        + "       (i64.xor (local.get $seed)"
        + "         (i64.mul (i64.extend_i32_u (local.get $p)) (i64.const 0x100000001B3))))))"
        + "   (local.set $p (i32.add (local.get $p) (local.get $step)))"
        + "   (br $l)))))";
  }

  private Instance newInstance() {
    return Instance.builder(unit.module())
        .withMachineFactory(unit.machineFactory())
        .withStart(false)
        .build();
  }

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    int n = mib * 16;
    unit = new UnitCompiler(2).compile(Wat2Wasm.parse(wat(n)));
    instance = newInstance();
    instance.export("touch").apply(0, 1, 0x9E3779B97F4A7C15L);
    Memory m = instance.memory();
    pages = new byte[n][];
    for (int i = 0; i < n; i++) {
      pages[i] = m.readBytes(i * Memory.PAGE_SIZE, Memory.PAGE_SIZE);
    }
    root = Files.createTempDirectory("snapshot-bench");
    storeDir = root.resolve("first");
    store = SnapshotStore.open(storeDir);
    first = InstanceSnapshot.capture(instance, unit.address(), null);
    firstAddress = store.put(first);
    firstBytes = store.bytesWritten();
    previous = first;
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    System.out.println(
        "SnapshotBench bytes mib="
            + mib
            + " first="
            + firstBytes
            + " onDisk="
            + du(storeDir)
            + (lastIncrementalBytes >= 0
                ? " incrementalMax="
                    + lastIncrementalBytes
                    + " ratio="
                    + String.format("%.4f", (double) lastIncrementalBytes / firstBytes)
                : ""));
    ScratchDirectory.delete(root);
  }

  private static long du(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile)
          .mapToLong(
              p -> {
                try {
                  return Files.size(p);
                } catch (IOException e) {
                  throw new UncheckedIOException(e);
                }
              })
          .sum();
    }
  }

  // ---- per-invocation state, outside the measured op ----

  private Path freshStoreDir;
  private SnapshotStore freshStore;

  @Setup(Level.Invocation)
  public void perInvocation() throws IOException {
    if (freshStoreDir != null) {
      ScratchDirectory.delete(freshStoreDir);
    }
    freshStoreDir = root.resolve("s" + (round++));
    freshStore = SnapshotStore.open(freshStoreDir);
    target = newInstance();
    // A new 1% of the pages for the incremental suspend: every 100th page, a new value
    // (at least one page: a 16-page memory has no 1%).
    instance.export("touch").apply(round % Math.min(100, mib * 16), 100, ++seed);
  }

  @Benchmark
  public long hash() {
    long x = 0;
    for (byte[] p : pages) {
      x += Blake3.hash(p)[0];
    }
    return x;
  }

  /** The CPU part of a suspend alone: copy out, zero test, hash; nothing written. */
  @Benchmark
  public InstanceSnapshot capture() {
    return InstanceSnapshot.capture(instance, unit.address(), null);
  }

  @Benchmark
  public String suspend() {
    return freshStore.put(InstanceSnapshot.capture(instance, unit.address(), null));
  }

  @Benchmark
  public Instance resume() {
    store.load(firstAddress).restore(target, unit.address());
    return target;
  }

  @Benchmark
  public String suspendAgain() {
    long before = store.bytesWritten();
    // Against the previous suspend (which the store holds): unchanged pages are compared, not
    // hashed, and not written.
    previous = InstanceSnapshot.capture(instance, unit.address(), previous);
    String a = store.put(previous);
    long written = store.bytesWritten() - before;
    lastIncrementalBytes = Math.max(lastIncrementalBytes, written);
    return a;
  }
}
