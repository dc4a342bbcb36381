package io.sandboxd.benchmarks;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * The wasm binary encodings the generated benchmark modules are written with: LEB128 and sections.
 */
final class WasmEncoding {
  private WasmEncoding() {}

  /** The module preamble: magic number and version 1. */
  static void header(ByteArrayOutputStream m) {
    m.writeBytes(new byte[] {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00});
  }

  /** The export section of a module whose one export is function {@code index}, as "run". */
  static void runExport(ByteArrayOutputStream m, int index) {
    ByteArrayOutputStream ex = new ByteArrayOutputStream();
    u32(ex, 1);
    vec(ex, "run".getBytes(StandardCharsets.UTF_8));
    ex.write(0);
    u32(ex, index);
    section(m, 7, ex.toByteArray());
  }

  /** A section: its id, then its content as a vector. */
  static void section(ByteArrayOutputStream m, int id, byte[] content) {
    m.write(id);
    vec(m, content);
  }

  /** A byte vector: its length (u32), then the bytes. */
  static void vec(ByteArrayOutputStream out, byte[] bytes) {
    u32(out, bytes.length);
    out.writeBytes(bytes);
  }

  /** Unsigned LEB128. */
  static void u32(ByteArrayOutputStream out, long v) {
    do {
      int b = (int) (v & 0x7f);
      v >>>= 7;
      out.write(v != 0 ? b | 0x80 : b);
    } while (v != 0);
  }

  /** Signed LEB128. */
  static void s32(ByteArrayOutputStream out, int v) {
    while (true) {
      int b = v & 0x7f;
      v >>= 7;
      if ((v == 0 && (b & 0x40) == 0) || (v == -1 && (b & 0x40) != 0)) {
        out.write(b);
        return;
      }
      out.write(b | 0x80);
    }
  }
}
