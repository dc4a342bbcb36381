package io.sandboxd.executor;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Writes small WebAssembly binaries byte by byte, for tests that need odd or hostile modules;
 * shared with the integration tests through this module's test-jar.
 */
public final class WasmWriter {
  public static final int TYPE = 1;
  public static final int IMPORT = 2;
  public static final int FUNCTION = 3;
  public static final int TABLE = 4;
  public static final int MEMORY = 5;
  public static final int GLOBAL = 6;
  public static final int EXPORT = 7;
  public static final int ELEMENT = 9;
  public static final int CODE = 10;
  public static final int DATA = 11;

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();

  public WasmWriter() {
    out.writeBytes(new byte[] {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00});
  }

  /** Appends a section with the given id and payload. */
  public WasmWriter section(int id, byte[] payload) {
    out.write(id);
    out.writeBytes(u32(payload.length));
    out.writeBytes(payload);
    return this;
  }

  public byte[] bytes() {
    return out.toByteArray();
  }

  public static byte[] u32(long v) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    do {
      int x = (int) (v & 0x7f);
      v >>>= 7;
      b.write(v != 0 ? x | 0x80 : x);
    } while (v != 0);
    return b.toByteArray();
  }

  public static byte[] name(String s) {
    byte[] u = s.getBytes(StandardCharsets.UTF_8);
    return concat(u32(u.length), u);
  }

  public static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      b.writeBytes(p);
    }
    return b.toByteArray();
  }

  /** A vector: its count then its items. */
  public static byte[] vec(byte[]... items) {
    return concat(u32(items.length), concat(items));
  }

  public static byte[] bytes(int... b) {
    byte[] r = new byte[b.length];
    for (int i = 0; i < b.length; i++) {
      r[i] = (byte) b[i];
    }
    return r;
  }

  /** A code-section entry: size, local groups (count, type), then the expression. */
  public static byte[] body(byte[] locals, byte[] code) {
    byte[] f = concat(locals, code);
    return concat(u32(f.length), f);
  }

  /**
   * A module whose functions all have type () -> i32 with the given code-section {@code bodies};
   * function {@code runIndex} is exported as "run".
   */
  public static byte[] runModule(long runIndex, byte[]... bodies) {
    byte[][] fs = new byte[bodies.length][];
    for (int i = 0; i < bodies.length; i++) {
      fs[i] = u32(0);
    }
    return new WasmWriter()
        .section(TYPE, vec(bytes(0x60, 0x00, 0x01, 0x7f)))
        .section(FUNCTION, vec(fs))
        .section(EXPORT, vec(concat(name("run"), bytes(0x00), u32(runIndex))))
        .section(CODE, vec(bodies))
        .bytes();
  }

  /** The body of a function that returns {@code value}. */
  public static byte[] returning(int value) {
    return body(vec(), concat(bytes(0x41), u32(value), bytes(0x0b)));
  }

  /** The smallest runnable unit: `run` returns 0. */
  public static byte[] minimal() {
    return runModule(0, returning(0));
  }

  /** {@code count} funcref tables of {@code entries} entries each, and a `run` that returns 0. */
  public static byte[] tables(int count, long entries) {
    byte[][] tables = new byte[count][];
    for (int i = 0; i < count; i++) {
      tables[i] = concat(bytes(0x70, 0x00), u32(entries));
    }
    return new WasmWriter()
        .section(TYPE, vec(bytes(0x60, 0x00, 0x01, 0x7f)))
        .section(FUNCTION, vec(u32(0)))
        .section(TABLE, vec(tables))
        .section(EXPORT, vec(concat(name("run"), bytes(0x00), u32(0))))
        .section(CODE, vec(returning(0)))
        .bytes();
  }

  /** `run` declaring {@code groups} local groups of {@code perGroup} i64 locals each. */
  public static byte[] manyLocals(int groups, long perGroup) {
    byte[][] g = new byte[groups][];
    for (int i = 0; i < groups; i++) {
      g[i] = concat(u32(perGroup), bytes(0x7e));
    }
    return runModule(0, body(vec(g), bytes(0x41, 0x00, 0x0b)));
  }

  /** {@code n} functions, each declaring {@code localsEach} i64 locals; `run` is function 0. */
  public static byte[] functionsWithLocals(int n, long localsEach) {
    byte[][] bodies = new byte[n][];
    for (int i = 0; i < n; i++) {
      bodies[i] = body(vec(concat(u32(localsEach), bytes(0x7e))), bytes(0x41, 0x00, 0x0b));
    }
    return runModule(0, bodies);
  }

  /** The body of a function holding one br_table of {@code targets} entries, returning 0. */
  static byte[] brTableBody(int targets) {
    // every label 0: the enclosing block
    return body(
        vec(),
        concat(
            bytes(0x02, 0x40, 0x41, 0x00, 0x0e),
            u32(targets),
            new byte[targets],
            bytes(0x00, 0x0b, 0x41, 0x00, 0x0b)));
  }

  /** `run` holding one br_table with {@code targets} entries (all to the function's block). */
  public static byte[] brTable(int targets) {
    return runModule(0, brTableBody(targets));
  }

  /**
   * `run` (function 0) returns {@code salt}; functions 1..n each hold a br_table of {@code targets}
   * entries: slow to compile, instant to run.
   */
  public static byte[] brTables(int n, int targets, int salt) {
    byte[][] bodies = new byte[n + 1][];
    bodies[0] = returning(salt);
    byte[] table = brTableBody(targets);
    for (int i = 1; i <= n; i++) {
      bodies[i] = table;
    }
    return runModule(0, bodies);
  }
}
