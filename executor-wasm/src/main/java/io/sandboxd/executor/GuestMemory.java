package io.sandboxd.executor;

import com.dylibso.chicory.runtime.Memory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Bounds-checked access to a guest's linear memory: pointers and lengths are unsigned 32-bit, and a
 * range outside memory is reported (the import then returns FAULT) instead of trapping the host.
 */
final class GuestMemory {
  private final Memory memory;

  GuestMemory(Memory memory) {
    this.memory = memory;
  }

  /**
   * True when {@code [ptr, ptr+len)} lies inside linear memory. A guest's i32 arrives sign-extended
   * and is read as unsigned; a length the host computed (a count times an element size) may exceed
   * 32 bits and is taken whole, never cut to 32 bits: cut, 2^29 iovecs of 8 bytes would read as a
   * length of 0 and pass.
   */
  boolean inBounds(long ptr, long len) {
    long p = unsigned(ptr);
    long l = unsigned(len);
    if (p < 0 || l < 0) {
      return false;
    }
    long size = memory == null ? 0 : (long) memory.pages() * Memory.PAGE_SIZE;
    return p <= size && l <= size - p;
  }

  /** A sign-extended i32 as its unsigned value; any other value as it is (negative: invalid). */
  private static long unsigned(long v) {
    return v < 0 && v >= Integer.MIN_VALUE ? v & 0xffffffffL : v;
  }

  byte[] read(long ptr, long len) {
    return memory.readBytes((int) ptr, (int) len);
  }

  /** The little-endian u32 at {@code ptr}; the caller has checked that it lies inside memory. */
  long u32(long ptr) {
    return ByteBuffer.wrap(read(ptr, 4)).order(ByteOrder.LITTLE_ENDIAN).getInt() & 0xffffffffL;
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
