package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.runtime.ByteArrayMemory;
import com.dylibso.chicory.runtime.Memory;
import com.dylibso.chicory.wasm.types.MemoryLimits;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Guest pointers and lengths: unsigned 32-bit from the guest, never wrapped when the host scales.
 */
class GuestMemoryTest {
  private static final long SIZE = Memory.PAGE_SIZE;

  private static GuestMemory onePage() {
    return new GuestMemory(new ByteArrayMemory(new MemoryLimits(1, 1)));
  }

  @Test
  void aRangeIsInsideOnlyWhenItsEndIsInside() {
    GuestMemory mem = onePage();
    assertTrue(mem.inBounds(0, SIZE));
    assertTrue(mem.inBounds(SIZE, 0));
    assertTrue(mem.inBounds(SIZE - 8, 8));
    assertFalse(mem.inBounds(SIZE - 8, 9));
    assertFalse(mem.inBounds(SIZE + 1, 0));
    // A guest's i32 comes sign-extended: -1 is 0xffffffff, far outside one page.
    assertFalse(mem.inBounds(-1, 1));
    assertFalse(mem.inBounds(0, -1));
    assertFalse(mem.inBounds(Integer.MIN_VALUE, 0));
  }

  @Test
  void aHostComputedLengthPast32BitsIsNotCutToFit() {
    GuestMemory mem = onePage();
    // Cut to 32 bits, each of these lengths would read as 0 (or a few bytes) and pass.
    for (long len : new long[] {1L << 32, (1L << 32) + 8, 1L << 35, Long.MAX_VALUE}) {
      assertFalse(mem.inBounds(0, len), "length " + len);
      assertFalse(mem.inBounds(8, len), "length " + len);
    }
    assertFalse(mem.inBounds(Long.MIN_VALUE, 0));
    assertFalse(mem.inBounds(1L << 32, 0));
  }

  @Test
  void anIovecCountTooLargeForMemoryIsAFaultNotAWalk() {
    GuestMemory mem = onePage();
    // Every count whose 8-byte entries cannot fit, including those whose byte length is a
    // multiple of 2^32 (which a 32-bit cut would turn into 0), as the guest passes them (i32).
    long[] counts = {SIZE / 8 + 1, 1L << 29, (1L << 29) + 1, 1L << 30, -1, Integer.MIN_VALUE};
    for (long count : counts) {
      assertEquals(-1, WasiRun.iovecBytes(mem, 0, count), "count " + count);
    }
    SplittableRandom random = new SplittableRandom(22);
    for (int i = 0; i < 1000; i++) {
      int count = random.nextInt(Integer.MIN_VALUE, Integer.MAX_VALUE);
      int iovs = random.nextInt();
      long bytes = (count & 0xffffffffL) * 8;
      long base = iovs & 0xffffffffL;
      long got = WasiRun.iovecBytes(mem, iovs, count);
      if (base + bytes > SIZE) {
        assertEquals(-1, got, "iovs " + base + " count " + (count & 0xffffffffL));
      } else {
        // Inside memory: zeroed entries, each (0, 0), so the total is 0.
        assertEquals(0, got, "iovs " + base + " count " + (count & 0xffffffffL));
      }
    }
  }

  @Test
  void anIovecArrayInsideMemoryIsSummed() {
    GuestMemory mem = onePage();
    // Two entries at 1024: (ptr 0, len 100) and (ptr 4096, len 50).
    mem.write(1024, new byte[] {0, 0, 0, 0, 100, 0, 0, 0, 0, 16, 0, 0, 50, 0, 0, 0});
    assertEquals(150, WasiRun.iovecBytes(mem, 1024, 2));
    // An entry whose buffer runs past memory makes the whole array a fault.
    mem.write(1024 + 12, new byte[] {(byte) 0xff, (byte) 0xff, 0, 0});
    assertEquals(-1, WasiRun.iovecBytes(mem, 1024, 2));
  }
}
