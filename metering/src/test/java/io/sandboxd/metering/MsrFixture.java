package io.sandboxd.metering;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/** A file laid out like /dev/cpu/N/msr: register R is 8 little-endian bytes at offset R. */
final class MsrFixture {
  static final long INTEL_UNIT = 0x606L;
  static final long INTEL_PKG = 0x611L;
  static final long INTEL_DRAM = 0x619L;
  static final long AMD_UNIT = 0xC001_0299L;
  static final long AMD_PKG = 0xC001_029BL;

  /** Power unit 3, energy status unit 14 (61.035 µJ), time unit 10: a common Intel value. */
  static final long UNIT_ESU_14 = 0x000A_0E03L;

  /** Energy status unit 16 (15.26 µJ), as on AMD Zen. */
  static final long UNIT_ESU_16 = 0x000A_1003L;

  private MsrFixture() {}

  static void put(Path file, long msr, long value) {
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      raf.seek(msr);
      raf.writeLong(Long.reverseBytes(value)); // RandomAccessFile writes big-endian
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
