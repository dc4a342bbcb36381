package io.sandboxd.benchmarks;

import static io.sandboxd.benchmarks.WasmEncoding.header;
import static io.sandboxd.benchmarks.WasmEncoding.runExport;
import static io.sandboxd.benchmarks.WasmEncoding.section;
import static io.sandboxd.benchmarks.WasmEncoding.u32;
import static io.sandboxd.benchmarks.WasmEncoding.vec;

import com.dylibso.chicory.compiler.MachineFactoryCompiler;
import com.dylibso.chicory.wasm.Parser;
import com.dylibso.chicory.wasm.WasmModule;
import io.sandboxd.executor.CompileLimits;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.executor.UnitException;
import java.io.ByteArrayOutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Locale;

/**
 * Compile time against module size for the three shapes of issue 24 item 4 (a command, not JMH: one
 * cold compile per module is what a submission pays): many one-instruction functions, one huge
 * function, deep block nesting; each at three sizes, generated here. For each: the module's bytes,
 * Chicory's parse and compile (wall and CPU of this thread) with no limits applied, and what the
 * node's default {@link CompileLimits} answer (compiled, or the refusal naming the field).
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.sandboxd.benchmarks.CompileShapes [--scale 1.0]
 * </pre>
 */
public final class CompileShapes {
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  private CompileShapes() {}

  public static void main(String[] args) {
    double scale = 1.0;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--scale")) {
        scale = Double.parseDouble(args[++i]);
      }
    }
    // Warm Chicory's own classes, so the first row is not the JVM's start-up.
    compile(manyFunctions(1000));
    System.out.printf(
        Locale.ROOT,
        "%-18s %10s %10s %9s %9s  %s%n",
        "shape",
        "size",
        "bytes",
        "wall_ms",
        "cpu_ms",
        "default limits");
    for (int n : new int[] {25_000, 100_000, 200_000}) {
      row("tiny-functions", n, manyFunctions((int) (n * scale)));
    }
    // The most functions the default limits admit for their code size: one per 32 bytes.
    for (int n : new int[] {10_000, 25_000, 40_000}) {
      row("32-byte-functions", n, functionsOf((int) (n * scale), 32));
    }
    for (int n : new int[] {50_000, 200_000, 400_000}) {
      row("one-function", n, oneFunction((int) (n * scale)));
    }
    for (int n : new int[] {1_000, 10_000, 100_000}) {
      row("deep-nesting", n, deepNesting((int) (n * scale)));
    }
  }

  private static void row(String shape, int size, byte[] wasm) {
    long w0 = System.nanoTime();
    long c0 = THREADS.getCurrentThreadCpuTime();
    String raw = compile(wasm);
    long wall = (System.nanoTime() - w0) / 1_000_000;
    long cpu = (THREADS.getCurrentThreadCpuTime() - c0) / 1_000_000;
    String verdict;
    try {
      new UnitCompiler(4, CompileLimits.defaults()).compileMetered(wasm);
      verdict = "compiled";
    } catch (UnitException e) {
      verdict = "refused: " + e.getMessage();
    }
    System.out.printf(
        Locale.ROOT,
        "%-18s %10d %10d %9d %9d  %s%s%n",
        shape,
        size,
        wasm.length,
        wall,
        cpu,
        raw.isEmpty() ? "" : "(chicory: " + raw + ") ",
        verdict.length() > 160 ? verdict.substring(0, 160) + "..." : verdict);
  }

  /** Parses and compiles with Chicory alone; "" when it did, else what it threw. */
  private static String compile(byte[] wasm) {
    try {
      WasmModule m = Parser.parse(wasm);
      MachineFactoryCompiler.compile(m);
      return "";
    } catch (RuntimeException | StackOverflowError e) {
      return e.getClass().getSimpleName();
    }
  }

  /** {@code n} functions () -> () whose body is one nop; {@code run} exports the first. */
  static byte[] manyFunctions(int n) {
    ByteArrayOutputStream code = new ByteArrayOutputStream();
    u32(code, n);
    for (int i = 0; i < n; i++) {
      code.writeBytes(new byte[] {0x03, 0x00, 0x01, 0x0b}); // size 3: no locals, nop, end
    }
    return module(n, code.toByteArray());
  }

  /** {@code n} functions () -> () whose bodies are {@code bytes} long (nops). */
  static byte[] functionsOf(int n, int bytes) {
    ByteArrayOutputStream code = new ByteArrayOutputStream();
    u32(code, n);
    for (int i = 0; i < n; i++) {
      u32(code, bytes);
      code.write(0); // no locals
      for (int k = 0; k < bytes - 2; k++) {
        code.write(0x01); // nop
      }
      code.write(0x0b);
    }
    return module(n, code.toByteArray());
  }

  /** One function () -> () of {@code pairs} times {@code i32.const 1; drop}. */
  static byte[] oneFunction(int pairs) {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(0); // no locals
    for (int i = 0; i < pairs; i++) {
      body.writeBytes(new byte[] {0x41, 0x01, 0x1a});
    }
    body.write(0x0b);
    return singleFunction(body);
  }

  /** One function () -> () of {@code depth} nested empty blocks. */
  static byte[] deepNesting(int depth) {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(0);
    for (int i = 0; i < depth; i++) {
      body.writeBytes(new byte[] {0x02, 0x40}); // block (no result)
    }
    for (int i = 0; i < depth; i++) {
      body.write(0x0b);
    }
    body.write(0x0b);
    return singleFunction(body);
  }

  /** The module whose one function has {@code body} (locals, code and its end). */
  private static byte[] singleFunction(ByteArrayOutputStream body) {
    ByteArrayOutputStream code = new ByteArrayOutputStream();
    u32(code, 1);
    vec(code, body.toByteArray());
    return module(1, code.toByteArray());
  }

  private static byte[] module(int functions, byte[] codeSection) {
    ByteArrayOutputStream m = new ByteArrayOutputStream();
    header(m);
    section(m, 1, new byte[] {0x01, 0x60, 0x00, 0x00}); // one type: () -> ()
    ByteArrayOutputStream fs = new ByteArrayOutputStream();
    u32(fs, functions);
    for (int i = 0; i < functions; i++) {
      fs.write(0);
    }
    section(m, 3, fs.toByteArray());
    runExport(m, 0);
    section(m, 10, codeSection);
    return m.toByteArray();
  }
}
