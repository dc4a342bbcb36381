package io.sandboxd.metering;

import io.sandboxd.attest.DeviceClass;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Finds the meters this node has: RAPL through powercap first, RAPL through MSRs only when powercap
 * is unusable, NVML for GPUs, and the estimator for configured classes nothing measures (by default
 * Cpu alone).
 */
public final class MeterDiscovery {
  private static final Pattern CPU_DIR = Pattern.compile("cpu(\\d+)");

  private MeterDiscovery() {}

  /** Probes every source with {@code System.nanoTime}. */
  public static DiscoveredMeters discover(MeteringConfig config) {
    return discover(config, config.nodeCpuTime(), System::nanoTime);
  }

  /** Probes every source; never throws for a missing source, it is recorded as a probe instead. */
  public static DiscoveredMeters discover(
      MeteringConfig config, NodeCpuTime node, LongSupplier clock) {
    Probing p = new Probing();
    p.open(
        RaplPowercapMeter.SOURCE,
        DeviceClass.Cpu,
        () -> RaplPowercapMeter.open(config.powercapRoot(), SysfsReader.files(), clock));

    if (p.measured.contains(DeviceClass.Cpu)) {
      p.skipped(RaplMsrMeter.SOURCE, "powercap RAPL is readable");
    } else {
      p.open(RaplMsrMeter.SOURCE, DeviceClass.Cpu, () -> openMsr(config, clock));
    }

    if (config.nvmlLibrary().isBlank()) {
      p.skipped(NvmlMeter.SOURCE, "disabled by configuration");
    } else {
      p.open(NvmlMeter.SOURCE, DeviceClass.Gpu, () -> NvmlMeter.open(config.nvmlLibrary(), clock));
    }

    Set<DeviceClass> estimated = EnumSet.noneOf(DeviceClass.class);
    for (DeviceClass c : config.estimator().milliwatts().keySet()) {
      if (!p.measured.contains(c)) {
        estimated.add(c);
      }
    }
    if (estimated.isEmpty()) {
      p.skipped(Estimator.SOURCE, "every modelled class is measured");
    } else {
      p.open(
          Estimator.SOURCE, null, () -> new Estimator(config.estimator(), estimated, node, clock));
    }
    return new DiscoveredMeters(p.meters, p.probes, node);
  }

  /** Opens one source's meter, which may be unavailable on this node. */
  private interface Opener {
    Meter open() throws MeterUnavailableException;
  }

  /** The meters found so far, a probe for every source tried, and the classes they measure. */
  private static final class Probing {
    final List<Meter> meters = new ArrayList<>();
    final List<MeterProbe> probes = new ArrayList<>();
    final Set<DeviceClass> measured = EnumSet.noneOf(DeviceClass.class);

    /**
     * Keeps the meter {@code opener} opens, counting {@code measures} (null: none, the estimator)
     * as measured; a source that is unavailable is recorded with the reason.
     */
    void open(String source, DeviceClass measures, Opener opener) {
      try {
        Meter meter = opener.open();
        meters.add(meter);
        if (measures != null) {
          measured.add(measures);
        }
        probes.add(new MeterProbe(source, MeterProbe.Status.Found, describe(meter)));
      } catch (MeterUnavailableException e) {
        probes.add(new MeterProbe(source, MeterProbe.Status.Unavailable, e.getMessage()));
      }
    }

    void skipped(String source, String why) {
      probes.add(new MeterProbe(source, MeterProbe.Status.Skipped, why));
    }
  }

  /** Opens the MSR meter on the first CPU of each package, with the vendor from cpuinfo. */
  static RaplMsrMeter openMsr(MeteringConfig config, LongSupplier clock)
      throws MeterUnavailableException {
    CpuVendor vendor = vendor(config.cpuInfo());
    List<Path> files = new ArrayList<>();
    for (int cpu : firstCpuOfEachPackage(config.cpuSysRoot())) {
      Path msr = config.msrRoot().resolve(Integer.toString(cpu)).resolve("msr");
      if (!Files.exists(msr)) {
        throw new MeterUnavailableException(
            "no MSR device at " + msr + " (is the msr module loaded?)");
      }
      files.add(msr);
    }
    return RaplMsrMeter.open(files, vendor, clock);
  }

  static CpuVendor vendor(Path cpuInfo) throws MeterUnavailableException {
    String text;
    try {
      text = SysfsReader.files().read(cpuInfo);
    } catch (IOException e) {
      throw new MeterUnavailableException("cannot read " + cpuInfo + ": " + e, e);
    }
    for (String line : text.split("\n", -1)) {
      if (line.startsWith("vendor_id")) {
        int colon = line.indexOf(':');
        String id = colon < 0 ? "" : line.substring(colon + 1).trim();
        CpuVendor vendor = CpuVendor.fromVendorId(id);
        if (vendor == null) {
          throw new MeterUnavailableException(
              "no RAPL MSR layout known for CPU vendor '" + id + "'");
        }
        return vendor;
      }
    }
    throw new MeterUnavailableException("no vendor_id line in " + cpuInfo);
  }

  /** The lowest-numbered CPU of each physical package, in package order. */
  static List<Integer> firstCpuOfEachPackage(Path cpuSysRoot) throws MeterUnavailableException {
    TreeMap<Integer, Integer> byPackage = new TreeMap<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(cpuSysRoot)) {
      for (Path dir : dirs) {
        Matcher m = CPU_DIR.matcher(dir.getFileName().toString());
        Path pkgFile = dir.resolve("topology").resolve("physical_package_id");
        if (!m.matches() || !Files.isRegularFile(pkgFile)) {
          continue;
        }
        int cpu = Integer.parseInt(m.group(1));
        int pkg = Integer.parseInt(SysfsReader.files().read(pkgFile).trim());
        byPackage.merge(pkg, cpu, Math::min);
      }
    } catch (IOException | NumberFormatException e) {
      throw new MeterUnavailableException(
          "cannot read CPU topology under " + cpuSysRoot + ": " + e, e);
    }
    if (byPackage.isEmpty()) {
      throw new MeterUnavailableException("no CPU topology under " + cpuSysRoot);
    }
    return List.copyOf(byPackage.values());
  }

  private static String describe(Meter meter) {
    List<String> ids = meter.domains().stream().map(MeterDomain::id).toList();
    return meter.domains().size() + " domain(s): " + String.join(", ", ids);
  }
}
