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

  long sizeBytes() {
    return memory == null ? 0 : (long) memory.pages() * Memory.PAGE_SIZE;
  }
}
