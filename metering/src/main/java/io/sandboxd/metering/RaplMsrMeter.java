package io.sandboxd.metering;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * RAPL read straight from the MSR device with {@code pread} through JNA, for kernels without
 * powercap or where it is not readable. Counters are 32 bits wide in energy units of 1/2^ESU J, ESU
 * being bits 12:8 of the unit register; the raw count is unfolded and converted to µJ from the
 * running total, so conversion never accumulates rounding.
 */
public final class RaplMsrMeter extends CounterMeter<RaplMsrMeter.Counter> {
  static final String SOURCE = "rapl-msr";
  static final long MIN_WINDOW_NS = 10_000_000L;

  private final List<MsrFile> files;

  private RaplMsrMeter(List<MsrFile> files, List<Counter> counters, LongSupplier clock) {
    super(SOURCE, counters, c -> c.domain, clock);
    this.files = files;
  }

  /**
   * Opens one MSR file per package (any CPU of that package) and takes baseline readings.
   *
   * @param packageFiles index i is read as {@code package-i}
   * @throws MeterUnavailableException when a file cannot be opened or its unit or package register
   *     cannot be read; a missing DRAM register only drops the DRAM domain
   */
  public static RaplMsrMeter open(List<Path> packageFiles, CpuVendor vendor, LongSupplier clock)
      throws MeterUnavailableException {
    if (packageFiles.isEmpty()) {
      throw new MeterUnavailableException("no MSR device given");
    }
    List<MsrFile> files = new ArrayList<>();
    List<Counter> counters = new ArrayList<>();
    try {
      for (int pkg = 0; pkg < packageFiles.size(); pkg++) {
        MsrFile file = MsrFile.open(packageFiles.get(pkg));
        files.add(file);
        int esu;
        long pkgRaw;
        try {
          esu = energyStatusUnit(file.read(vendor.unitMsr));
          pkgRaw = file.read(vendor.packageMsr) & 0xFFFF_FFFFL;
        } catch (MeterException e) {
          throw new MeterUnavailableException(e.getMessage(), e);
        }
        String name = "package-" + pkg;
        counters.add(
            new Counter(
                domain(name, DomainRole.Package, esu), file, vendor.packageMsr, esu, pkgRaw));
        if (vendor.dramMsr >= 0) {
          try {
            long dramRaw = file.read(vendor.dramMsr) & 0xFFFF_FFFFL;
            counters.add(
                new Counter(
                    domain(name + "/dram", DomainRole.Dram, esu),
                    file,
                    vendor.dramMsr,
                    esu,
                    dramRaw));
          } catch (MeterException e) {
            // no DRAM RAPL on this part (client CPUs): the package alone is still a meter
          }
        }
      }
    } catch (MeterUnavailableException e) {
      files.forEach(MsrFile::close);
      throw e;
    }
    return new RaplMsrMeter(List.copyOf(files), List.copyOf(counters), clock);
  }

  /** ESU = bits 12:8 of the power-unit register; one count is 1/2^ESU J. */
  static int energyStatusUnit(long unitRegister) {
    return (int) ((unitRegister >>> 8) & 0x1F);
  }

  /** µJ in {@code raw} counts of 1/2^esu J, floored: raw × 10^6 / 2^esu in 128-bit arithmetic. */
  static long microjoules(long raw, int esu) {
    return CounterArithmetic.mulShiftRight(raw, 1_000_000L, esu);
  }

  private static MeterDomain domain(String id, DomainRole role, int esu) {
    // one count, rounded up: the finest step this counter can show
    long resolution = Math.max(1, (1_000_000L + (1L << esu) - 1) >>> esu);
    return new MeterDomain(
        id, DeviceClass.Cpu, role, Provenance.HwShunt, resolution, MIN_WINDOW_NS, SOURCE);
  }

  @Override
  DomainCount read(Counter c, long atNs) throws MeterException {
    long raw = c.file.read(c.msr) & 0xFFFF_FFFFL;
    c.totalRaw += CounterArithmetic.delta32(c.previousRaw, raw);
    c.previousRaw = raw;
    return new DomainCount(microjoules(c.totalRaw, c.esu), false);
  }

  @Override
  public synchronized void close() {
    files.forEach(MsrFile::close);
  }

  /** One register's unfolded raw count. */
  static final class Counter {
    final MeterDomain domain;
    final MsrFile file;
    final long msr;
    final int esu;
    long previousRaw;
    long totalRaw;

    Counter(MeterDomain domain, MsrFile file, long msr, int esu, long baselineRaw) {
      this.domain = domain;
      this.file = file;
      this.msr = msr;
      this.esu = esu;
      this.previousRaw = baselineRaw;
    }
  }
}
