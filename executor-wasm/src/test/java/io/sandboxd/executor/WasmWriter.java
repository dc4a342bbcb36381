package io.sandboxd.executor;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** Writes small WebAssembly binaries byte by byte, for tests that need odd or hostile modules. */
final class WasmWriter {
  static final int TYPE = 1;
  static final int IMPORT = 2;
  static final int FUNCTION = 3;
  static final int TABLE = 4;
  static final int MEMORY = 5;
  static final int GLOBAL = 6;
  static final int EXPORT = 7;
  static final int ELEMENT = 9;
  static final int CODE = 10;
  static final int DATA = 11;

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();

  WasmWriter() {
    out.writeBytes(new byte[] {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00});
  }

  /** Appends a section with the given id and payload. */
  WasmWriter section(int id, byte[] payload) {
    out.write(id);
    out.writeBytes(u32(payload.length));
    out.writeBytes(payload);
    return this;
  }

  byte[] bytes() {
    return out.toByteArray();
  }

  static byte[] u32(long v) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    do {
      int x = (int) (v & 0x7f);
      v >>>= 7;
      b.write(v != 0 ? x | 0x80 : x);
    } while (v != 0);
    return b.toByteArray();
  }

  static byte[] name(String s) {
    byte[] u = s.getBytes(StandardCharsets.UTF_8);
    return concat(u32(u.length), u);
  }

  static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      b.writeBytes(p);
    }
    return b.toByteArray();
  }

  /** A vector: its count then its items. */
  static byte[] vec(byte[]... items) {
    return concat(u32(items.length), concat(items));
  }

  static byte[] bytes(int... b) {
    byte[] r = new byte[b.length];
    for (int i = 0; i < b.length; i++) {
      r[i] = (byte) b[i];
    }
    return r;
  }

  /** A code-section entry: size, local groups (count, type), then the expression. */
  static byte[] body(byte[] locals, byte[] code) {
    byte[] f = concat(locals, code);
    return concat(u32(f.length), f);
  }

  /** Type 0 is () -> i32; function 0 of that type is exported as "run" and returns 0. */

  /** The smallest runnable unit: `run` returns 0. */
  static byte[] minimal() {
    return new WasmWriter()
        .section(TYPE, vec(bytes(0x60, 0x00, 0x01, 0x7f)))
        .section(FUNCTION, vec(u32(0)))
        .section(EXPORT, vec(concat(name("run"), bytes(0x00), u32(0))))
        .section(CODE, vec(body(vec(), bytes(0x41, 0x00, 0x0b))))
        .bytes();
  }

  /** {@code count} funcref tables of {@code entries} entries each, and a `run` that returns 0. */
  static byte[] tables(int count, long entries) {
    byte[][] tables = new byte[count][];
    for (int i = 0; i < count; i++) {
      tables[i] = concat(bytes(0x70, 0x00), u32(entries));
    }
    return new WasmWriter()
        .section(TYPE, vec(bytes(0x60, 0x00, 0x01, 0x7f)))
        .section(FUNCTION, vec(u32(0)))
        .section(TABLE, vec(tables))
        .section(EXPORT, vec(concat(name("run"), bytes(0x00), u32(0))))
        .section(CODE, vec(body(vec(), bytes(0x41, 0x00, 0x0b))))
        .bytes();
  }

  /** `run` declaring {@code groups} local groups of {@code perGroup} i64 locals each. */
  static byte[] manyLocals(int groups, long perGroup) {
    byte[][] g = new byte[groups][];
    for (int i = 0; i < groups; i++) {
      g[i] = concat(u32(perGroup), bytes(0x7e));
    }
    return new WasmWriter()
        .section(TYPE, vec(bytes(0x60, 0x00, 0x01, 0x7f)))
        .section(FUNCTION, vec(u32(0)))
        .section(EXPORT, vec(concat(name("run"), bytes(0x00), u32(0))))
        .section(CODE, vec(body(vec(g), bytes(0x41, 0x00, 0x0b))))
        .bytes();
  }

  /** `run` holding one br_table with {@code targets} entries (all to the function's block). */
  static byte[] brTable(int targets) {
    byte[] labels = new byte[targets];
    // every label 0: the enclosing block
    byte[] code =
        concat(
            bytes(0x02, 0x40, 0x41, 0x00, 0x0e),
            u32(targets),
            labels,
            bytes(0x00, 0x0b, 0x41, 0x00, 0x0b));
    return new WasmWriter()
        .section(TYPE, vec(bytes(0x60, 0x00, 0x01, 0x7f)))
        .section(FUNCTION, vec(u32(0)))
        .section(EXPORT, vec(concat(name("run"), bytes(0x00), u32(0))))
        .section(CODE, vec(body(vec(), code)))
        .bytes();
  }
}
