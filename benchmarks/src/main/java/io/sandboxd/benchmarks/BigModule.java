package io.sandboxd.benchmarks;

import static io.sandboxd.benchmarks.WasmEncoding.header;
import static io.sandboxd.benchmarks.WasmEncoding.runExport;
import static io.sandboxd.benchmarks.WasmEncoding.s32;
import static io.sandboxd.benchmarks.WasmEncoding.section;
import static io.sandboxd.benchmarks.WasmEncoding.u32;
import static io.sandboxd.benchmarks.WasmEncoding.vec;

import java.io.ByteArrayOutputStream;
import java.util.Random;

/**
 * A generated module of ordinary code at a chosen size (issue 16 item 5): many functions of
 * straight-line integer arithmetic on four locals, with a conditional branch every few operations
 * and a call to the previous function (in chains of 32), as compiled C looks to a compiler, and an
 * exported {@code run} that calls the last one and returns 0. Seeded, so a size always gives the
 * same bytes.
 */
final class BigModule {
  /** Bytes of one function body, roughly: C compilers emit functions of this order. */
  static final int BODY_BYTES = 2048;

  private BigModule() {}

  /** A module whose code section holds about {@code codeBytes} bytes. */
  static byte[] generate(long codeBytes, long seed) {
    Random random = new Random(seed);
    int functions = (int) Math.max(2, codeBytes / BODY_BYTES);
    ByteArrayOutputStream code = new ByteArrayOutputStream();
    u32(code, functions + 1);
    for (int f = 0; f < functions; f++) {
      vec(code, body(f, random));
    }
    // run: () -> i32, calls the last generated function with 1, returns 0.
    ByteArrayOutputStream run = new ByteArrayOutputStream();
    run.write(0); // no locals
    run.write(0x41); // i32.const 1
    s32(run, 1);
    run.write(0x10); // call
    u32(run, functions - 1);
    run.write(0x1a); // drop: the entry returns 0, so the run completes
    run.write(0x41);
    s32(run, 0);
    run.write(0x0b);
    vec(code, run.toByteArray());

    ByteArrayOutputStream m = new ByteArrayOutputStream();
    header(m);
    // types: 0 = (i32) -> i32, 1 = () -> i32
    section(m, 1, new byte[] {0x02, 0x60, 0x01, 0x7f, 0x01, 0x7f, 0x60, 0x00, 0x01, 0x7f});
    ByteArrayOutputStream fs = new ByteArrayOutputStream();
    u32(fs, functions + 1);
    for (int f = 0; f < functions; f++) {
      fs.write(0);
    }
    fs.write(1);
    section(m, 3, fs.toByteArray());
    runExport(m, functions);
    section(m, 10, code.toByteArray());
    return m.toByteArray();
  }

  private static byte[] body(int index, Random random) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    b.write(1); // one group of locals
    b.write(4);
    b.write(0x7f); // 4 x i32 (local 0 is the parameter: 5 in all)
    int ops = 0;
    while (b.size() < BODY_BYTES - 24) {
      int src = random.nextInt(5);
      int dst = 1 + random.nextInt(4);
      b.write(0x20); // local.get
      b.write(src);
      b.write(0x41); // i32.const
      s32(b, random.nextInt(1 << 20));
      b.write(ARITH[random.nextInt(ARITH.length)]);
      b.write(0x21); // local.set
      b.write(dst);
      if (++ops % 8 == 0) {
        // if (local) { local = local + 1 }
        b.write(0x20);
        b.write(dst);
        b.write(0x04); // if
        b.write(0x40); // empty block type
        b.write(0x20);
        b.write(dst);
        b.write(0x41);
        s32(b, 1);
        b.write(0x6a); // i32.add
        b.write(0x21);
        b.write(dst);
        b.write(0x0b); // end
      }
    }
    // Calls chain in runs of 32, so the call stack stays shallow however many functions there are.
    if (index % 32 != 0) {
      b.write(0x20);
      b.write(1);
      b.write(0x10); // call the previous function
      u32(b, index - 1);
      b.write(0x21);
      b.write(2);
    }
    // return local1 ^ local2 ^ param
    b.write(0x20);
    b.write(1);
    b.write(0x20);
    b.write(2);
    b.write(0x73); // i32.xor
    b.write(0x20);
    b.write(0);
    b.write(0x73);
    b.write(0x0b);
    return b.toByteArray();
  }

  // i32.add, i32.sub, i32.mul, i32.and, i32.or, i32.xor, i32.shl, i32.rotl
  private static final int[] ARITH = {0x6a, 0x6b, 0x6c, 0x71, 0x72, 0x73, 0x74, 0x77};
}
