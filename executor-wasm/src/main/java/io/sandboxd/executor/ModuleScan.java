package io.sandboxd.executor;

/**
 * A linear pass over a module's bytes, before Chicory parses it, that refuses declarations whose
 * parsing or compiling would cost more than the module's size justifies: section entry counts,
 * function sizes and declared locals. Everything it does not need it skips by section size; a
 * module it cannot read is malformed, and the error names the byte.
 */
final class ModuleScan {
  private static final int TYPE = 1;
  private static final int IMPORT = 2;
  private static final int FUNCTION = 3;
  private static final int TABLE = 4;
  private static final int GLOBAL = 6;
  private static final int EXPORT = 7;
  private static final int ELEMENT = 9;
  private static final int CODE = 10;
  private static final int DATA = 11;

  private final byte[] wasm;
  private final CompileLimits limits;
  private int pos;

  private ModuleScan(byte[] wasm, CompileLimits limits) {
    this.wasm = wasm;
    this.limits = limits;
  }

  /** Refuses {@code wasm} when it declares more than {@code limits} allow. */
  static void check(byte[] wasm, CompileLimits limits) {
    new ModuleScan(wasm, limits).sections();
  }

  private void sections() {
    pos = 8;
    while (pos < wasm.length) {
      int at = pos;
      int id = wasm[pos++] & 0xff;
      long size = u32("section " + id + " size");
      if (size > wasm.length - pos) {
        throw malformed(
            at, "section " + id + " claims " + size + " bytes; " + (wasm.length - pos) + " remain");
      }
      int end = pos + (int) size;
      switch (id) {
        case TYPE -> count(end, "types", limits.maxTypes());
        case IMPORT -> count(end, "imports", limits.maxImports());
        case FUNCTION -> count(end, "functions", limits.maxFunctions());
        case TABLE -> count(end, "tables", limits.maxTables());
        case GLOBAL -> count(end, "globals", limits.maxGlobals());
        case EXPORT -> count(end, "exports", limits.maxExports());
        case ELEMENT -> count(end, "element segments", limits.maxElementSegments());
        case DATA -> count(end, "data segments", limits.maxDataSegments());
        case CODE -> code(end, size);
        default -> {
          // custom and other sections: nothing to bound here; Chicory reads them
        }
      }
      pos = end;
    }
  }

  private void count(int end, String what, long max) {
    if (pos >= end) {
      return;
    }
    int at = pos;
    long n = u32(what + " count");
    if (n > max) {
      throw limit(at, "declares " + n + " " + what + "; the limit is " + max);
    }
  }

  private void code(int end, long sectionBytes) {
    int at = pos;
    long n = u32("function body count");
    if (n > limits.maxFunctions()) {
      throw limit(at, "declares " + n + " function bodies; the limit is " + limits.maxFunctions());
    }
    long byBytes = limits.maxFunctionsFor(sectionBytes);
    if (n > byBytes) {
      throw limit(
          at,
          "functions: "
              + n
              + " in a code section of "
              + sectionBytes
              + " bytes; a module may define the larger of "
              + CompileLimits.FUNCTIONS_FLOOR
              + " and one per "
              + CompileLimits.CODE_BYTES_PER_FUNCTION
              + " bytes of code ("
              + byBytes
              + " here): compiling costs per function");
    }
    long totalLocals = 0;
    long maxTotal = Math.max(limits.localsFloor(), sectionBytes);
    for (long f = 0; f < n; f++) {
      int bodyAt = pos;
      long size = u32("function " + f + " size");
      if (size > limits.maxFunctionBytes()) {
        throw limit(
            bodyAt,
            "function "
                + f
                + " is "
                + size
                + " bytes; the limit is "
                + limits.maxFunctionBytes()
                + " bytes per function");
      }
      if (size > end - pos) {
        throw malformed(bodyAt, "function " + f + " claims " + size + " bytes past its section");
      }
      int bodyEnd = pos + (int) size;
      long groups = u32("function " + f + " local groups");
      long locals = 0;
      for (long g = 0; g < groups && pos < bodyEnd; g++) {
        int groupAt = pos;
        locals += u32("function " + f + " local count");
        if (locals > limits.maxLocalsPerFunction()) {
          throw limit(
              groupAt,
              "function "
                  + f
                  + " declares more than "
                  + limits.maxLocalsPerFunction()
                  + " locals (the limit per function)");
        }
        valueType(bodyEnd);
      }
      totalLocals += locals;
      if (totalLocals > maxTotal) {
        throw limit(
            bodyAt,
            "functions 0.."
                + f
                + " declare "
                + totalLocals
                + " locals; a module may declare at most "
                + maxTotal
                + " (its code section's size in bytes, or "
                + limits.localsFloor()
                + ")");
      }
      pos = bodyEnd;
    }
  }

  /** Skips a value type: one byte, or a reference type's prefix and its heap type. */
  private void valueType(int end) {
    if (pos >= end) {
      throw malformed(pos, "a local group ends before its type");
    }
    int t = wasm[pos++] & 0xff;
    if (t == 0x63 || t == 0x64) {
      u32("heap type");
    }
  }

  private long u32(String what) {
    long result = 0;
    int start = pos;
    for (int shift = 0; shift < 35; shift += 7) {
      if (pos >= wasm.length) {
        throw malformed(start, what + ": the module ends inside a LEB128 number");
      }
      int b = wasm[pos++] & 0xff;
      result |= (long) (b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        return result;
      }
    }
    throw malformed(start, what + ": LEB128 number longer than 5 bytes");
  }

  private static UnitException malformed(int at, String why) {
    return new UnitException(
        UnitException.Part.MODULE,
        "module: byte " + at + ": not a valid WebAssembly module: " + why);
  }

  private static UnitException limit(int at, String why) {
    return new UnitException(UnitException.Part.LIMIT, "module: byte " + at + ": " + why);
  }
}
