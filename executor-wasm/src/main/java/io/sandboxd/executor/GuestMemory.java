package io.sandboxd.executor;

import com.dylibso.chicory.runtime.Memory;

/**
 * Bounds-checked access to a guest's linear memory: pointers and lengths are unsigned 32-bit, and a
 * range outside memory is reported (the import then returns FAULT) instead of trapping the host.
 */
final class GuestMemory {
  private final Memory memory;

  GuestMemory(Memory memory) {
    this.memory = memory;
  }

  /** True when {@code [ptr, ptr+len)} lies inside linear memory. */
  boolean inBounds(long ptr, long len) {
    long p = ptr & 0xffffffffL;
    long l = len & 0xffffffffL;
    long size = memory == null ? 0 : (long) memory.pages() * Memory.PAGE_SIZE;
    return p + l <= size;
  }

  byte[] read(long ptr, long len) {
    return memory.readBytes((int) ptr, (int) len);
  }

  void write(long ptr, byte[] data) {
    memory.write((int) ptr, data);
  }

  void writeLong(long ptr, long v) {
    memory.writeLong((int) ptr, v);
  }

  /**
   * Writes {@code data} to an output buffer {@code (ptr, cap, len_out)}: the full length always
   * goes to {@code len_out}; if {@code cap} is too small nothing else is written (TOO_SMALL), so
   * the guest can retry with a bigger buffer.
   */
  int writeOut(long ptr, long cap, long lenOut, byte[] data) {
    if (!inBounds(lenOut, 4) || !inBounds(ptr, cap)) {
      return AbiStatus.FAULT;
    }
    memory.writeI32((int) lenOut, data.length);
    if (data.length > (cap & 0xffffffffL)) {
      return AbiStatus.TOO_SMALL;
    }
    memory.write((int) ptr, data);
    return AbiStatus.OK;
  }

  /** The bytes at {@code (ptr, len)}, or null when the range is outside memory. */
  byte[] readChecked(long ptr, long len) {
    return inBounds(ptr, len) ? read(ptr, len) : null;
  }
}
