package io.sandboxd.benchmarks;

import java.io.ByteArrayOutputStream;

/**
 * The wasm binary encodings the generated benchmark modules are written with: LEB128 and sections.
 */
final class WasmEncoding {
  private WasmEncoding() {}

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
