package io.sandboxd.metering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs the real JNA {@code pread} path against files laid out like /dev/cpu/N/msr. */
class RaplMsrMeterTest {
  @TempDir Path dir;

  private Path intel(long pkgRaw, long dramRaw) {
    Path f = dir.resolve("msr-intel");
    MsrFixture.put(f, MsrFixture.INTEL_UNIT, MsrFixture.UNIT_ESU_14);
    MsrFixture.put(f, MsrFixture.INTEL_PKG, pkgRaw);
    MsrFixture.put(f, MsrFixture.INTEL_DRAM, dramRaw);
    return f;
  }

  @Test
  void intelPackageAndDramInEnergyUnits() throws Exception {
    Path f = intel(1000, 50);
    try (RaplMsrMeter m = RaplMsrMeter.open(List.of(f), CpuVendor.Intel, System::nanoTime)) {
      assertEquals(
          List.of("package-0", "package-0/dram"),
          m.domains().stream().map(MeterDomain::id).toList());
      assertEquals(62, m.domains().get(0).resolutionUj()); // 1/2^14 J = 61.04 µJ, rounded up
      assertEquals("rapl-msr", m.source());
      MsrFixture.put(f, MsrFixture.INTEL_PKG, 1000 + 16_384); // exactly 1 J
      MsrFixture.put(f, MsrFixture.INTEL_DRAM, 50 + 3 * 16_384);
      MeterSample s = m.sample();
      assertEquals(1_000_000, s.cumulativeUj(0));
      assertEquals(3_000_000, s.cumulativeUj(1));
    }
  }

  @Test
  void thirtyTwoBitWrapAndReservedHighBits() throws Exception {
    Path f = intel(0xFFFF_FF00L, 0);
    try (RaplMsrMeter m = RaplMsrMeter.open(List.of(f), CpuVendor.Intel, System::nanoTime)) {
      // reserved bits 63:32 must be ignored; the counter wrapped from 0xFFFFFF00 to 0x100
      MsrFixture.put(f, MsrFixture.INTEL_PKG, 0xDEAD_0000_0000_0100L);
      assertEquals(31_250, m.sample().cumulativeUj(0)); // 512 counts × 10^6 / 2^14
    }
  }

  @Test
  void conversionFromTheRunningTotalDoesNotDrift() throws Exception {
    Path f = intel(0, 0);
    try (RaplMsrMeter m = RaplMsrMeter.open(List.of(f), CpuVendor.Intel, System::nanoTime)) {
      long floorOfSteps = 0;
      for (int i = 1; i <= 100; i++) {
        MsrFixture.put(f, MsrFixture.INTEL_PKG, i);
        assertEquals((i * 1_000_000L) >> 14, m.sample().cumulativeUj(0));
        floorOfSteps += 1_000_000L >> 14; // what converting each delta would have given
      }
      assertEquals(6_103, m.sample().cumulativeUj(0));
      assertEquals(6_100, floorOfSteps); // 3 µJ lost per 100 samples by per-step rounding
    }
  }

  @Test
  void amdRegistersAtTheirHighAddresses() throws Exception {
    Path f = dir.resolve("msr-amd"); // a sparse file: the package register sits past 3 GiB
    MsrFixture.put(f, MsrFixture.AMD_UNIT, MsrFixture.UNIT_ESU_16);
    MsrFixture.put(f, MsrFixture.AMD_PKG, 7);
    try (RaplMsrMeter m = RaplMsrMeter.open(List.of(f), CpuVendor.Amd, System::nanoTime)) {
      assertEquals(List.of("package-0"), m.domains().stream().map(MeterDomain::id).toList());
      assertEquals(16, m.domains().get(0).resolutionUj());
      MsrFixture.put(f, MsrFixture.AMD_PKG, 7 + 65_536); // 1 J at 1/2^16 J
      assertEquals(1_000_000, m.sample().cumulativeUj(0));
    }
  }

  @Test
  void missingDramRegisterDropsOnlyDram() throws Exception {
    Path f = dir.resolve("msr-client");
    MsrFixture.put(f, MsrFixture.INTEL_UNIT, MsrFixture.UNIT_ESU_14);
    MsrFixture.put(f, MsrFixture.INTEL_PKG, 5); // file ends before 0x619
    try (RaplMsrMeter m = RaplMsrMeter.open(List.of(f), CpuVendor.Intel, System::nanoTime)) {
      assertEquals(List.of("package-0"), m.domains().stream().map(MeterDomain::id).toList());
    }
  }

  @Test
  void onePerPackage() throws Exception {
    Path a = intel(0, 0);
    Path b = dir.resolve("msr-1");
    MsrFixture.put(b, MsrFixture.INTEL_UNIT, MsrFixture.UNIT_ESU_14);
    MsrFixture.put(b, MsrFixture.INTEL_PKG, 0);
    try (RaplMsrMeter m = RaplMsrMeter.open(List.of(a, b), CpuVendor.Intel, System::nanoTime)) {
      assertEquals(
          List.of("package-0", "package-0/dram", "package-1"),
          m.domains().stream().map(MeterDomain::id).toList());
      MsrFixture.put(b, MsrFixture.INTEL_PKG, 16_384 * 2);
      MeterSample s = m.sample();
      assertEquals(0, s.cumulativeUj(0));
      assertEquals(2_000_000, s.cumulativeUj(2));
    }
  }

  @Test
  void missingDeviceIsUnavailableWithErrno() {
    MeterUnavailableException e =
        assertThrows(
            MeterUnavailableException.class,
            () ->
                RaplMsrMeter.open(List.of(dir.resolve("nope")), CpuVendor.Intel, System::nanoTime));
    assertTrue(e.getMessage().contains("errno 2"), e.getMessage());
  }

  @Test
  void unreadableUnitRegisterIsUnavailable() {
    Path f = dir.resolve("short");
    MsrFixture.put(f, 0, 0); // 8 bytes: 0x606 lies past the end
    MeterUnavailableException e =
        assertThrows(
            MeterUnavailableException.class,
            () -> RaplMsrMeter.open(List.of(f), CpuVendor.Intel, System::nanoTime));
    assertTrue(e.getMessage().contains("0x606"), e.getMessage());
  }

  @Test
  void energyStatusUnitIsBits12To8() {
    assertEquals(14, RaplMsrMeter.energyStatusUnit(0x000A_0E03L));
    assertEquals(16, RaplMsrMeter.energyStatusUnit(0x000A_1003L));
    assertEquals(31, RaplMsrMeter.energyStatusUnit(0xFFFF_FFFFL));
  }
}
