package io.sandboxd.metering;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * RAPL through the powercap sysfs tree ({@code /sys/class/powercap}): every package zone and its
 * core/uncore/dram subzones, plus psys kept apart, on Intel and on AMD (whose Zen RAPL the kernel
 * exposes under the same {@code intel-rapl} control type; an {@code amd-rapl} prefix is accepted
 * too).
 */
public final class RaplPowercapMeter extends CounterMeter<RaplPowercapMeter.Zone> {
  /** The default root of the tree. */
  public static final Path DEFAULT_ROOT = Path.of("/sys/class/powercap");

  static final String SOURCE = "rapl";

  /** sysfs reports µJ; RAPL hardware updates roughly every millisecond, 10 ms is a safe window. */
  static final long RESOLUTION_UJ = 1;

  static final long MIN_WINDOW_NS = 10_000_000L;

  // intel-rapl-mmio duplicates the package counter on some client parts, so it is not matched
  private static final Pattern ZONE = Pattern.compile("(intel-rapl|amd-rapl):(\\d+)(?::(\\d+))?");

  private final SysfsReader reader;

  private RaplPowercapMeter(List<Zone> zones, SysfsReader reader, LongSupplier clock) {
    super(SOURCE, zones, z -> z.domain, clock);
    this.reader = reader;
  }

  /** Opens the tree at {@code root} with the real file system and {@code System.nanoTime}. */
  public static RaplPowercapMeter open(Path root) throws MeterUnavailableException {
    return open(root, SysfsReader.files(), System::nanoTime);
  }

  /**
   * Enumerates the zones under {@code root}, reads each {@code max_energy_range_uj} once and takes
   * a baseline reading of each {@code energy_uj}.
   *
   * @throws MeterUnavailableException when there is no tree, no zone, or a counter cannot be read;
   *     the message names the file and, for a permission problem, the fix
   */
  public static RaplPowercapMeter open(Path root, SysfsReader reader, LongSupplier clock)
      throws MeterUnavailableException {
    if (!Files.isDirectory(root)) {
      throw new MeterUnavailableException("no powercap tree at " + root);
    }
    List<Path> dirs = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(root)) {
      for (Path entry : entries) {
        if (ZONE.matcher(entry.getFileName().toString()).matches()) {
          dirs.add(entry);
        }
      }
    } catch (IOException e) {
      throw new MeterUnavailableException("cannot list powercap tree " + root + ": " + e, e);
    }
    dirs.sort(Comparator.comparing(RaplPowercapMeter::zoneOrder));
    List<Zone> zones = new ArrayList<>();
    for (Path dir : dirs) {
      Zone zone = openZone(dir, dirs, reader);
      if (zone != null) {
        zones.add(zone);
      }
    }
    if (zones.stream().noneMatch(z -> z.domain.role() == DomainRole.Package)) {
      throw new MeterUnavailableException("no RAPL package zone under " + root);
    }
    return new RaplPowercapMeter(List.copyOf(zones), reader, clock);
  }

  private static String zoneOrder(Path dir) {
    Matcher m = ZONE.matcher(dir.getFileName().toString());
    if (!m.matches()) {
      throw new IllegalStateException("not a zone: " + dir);
    }
    String sub =
        m.group(3) == null ? "" : String.format(Locale.ROOT, "%08d", Integer.parseInt(m.group(3)));
    return String.format(Locale.ROOT, "%s:%08d:%s", m.group(1), Integer.parseInt(m.group(2)), sub);
  }

  private static Zone openZone(Path dir, List<Path> all, SysfsReader reader)
      throws MeterUnavailableException {
    Matcher m = ZONE.matcher(dir.getFileName().toString());
    if (!m.matches()) {
      throw new IllegalStateException("not a zone: " + dir);
    }
    String name = readText(reader, dir.resolve("name"));
    boolean subzone = m.group(3) != null;
    DomainRole role = roleOf(name, subzone);
    if (role == null) {
      return null; // an unknown zone type: reported by nothing, counted by nothing
    }
    String id = name;
    if (subzone) {
      Path parent = dir.resolveSibling(m.group(1) + ":" + m.group(2));
      if (!all.contains(parent)) {
        throw new MeterUnavailableException("subzone " + dir + " has no parent zone " + parent);
      }
      id = readText(reader, parent.resolve("name")) + "/" + name;
    }
    long max = readCounter(reader, dir.resolve("max_energy_range_uj"));
    if (max <= 0) {
      throw new MeterUnavailableException(
          dir.resolve("max_energy_range_uj") + " is " + max + ": a counter needs a positive range");
    }
    long baseline = readCounter(reader, dir.resolve("energy_uj"));
    MeterDomain domain =
        new MeterDomain(
            id, DeviceClass.Cpu, role, Provenance.HwShunt, RESOLUTION_UJ, MIN_WINDOW_NS, SOURCE);
    return new Zone(domain, dir.resolve("energy_uj"), max, baseline);
  }

  private static DomainRole roleOf(String name, boolean subzone) {
    if (name.startsWith("package")) {
      return DomainRole.Package;
    }
    return switch (name) {
      case "core" -> DomainRole.Core;
      case "uncore" -> DomainRole.Uncore;
      case "dram" -> DomainRole.Dram;
      case "psys" -> subzone ? null : DomainRole.Psys;
      default -> null;
    };
  }

  private static String readText(SysfsReader reader, Path file) throws MeterUnavailableException {
    try {
      return reader.read(file).trim();
    } catch (IOException e) {
      throw new MeterUnavailableException(describe(file, e), e);
    }
  }

  private static long readCounter(SysfsReader reader, Path file) throws MeterUnavailableException {
    try {
      return parseCounter(file, reader.read(file));
    } catch (IOException e) {
      throw new MeterUnavailableException(describe(file, e), e);
    }
  }

  private static long parseCounter(Path file, String text) throws IOException {
    try {
      long value = Long.parseLong(text.trim());
      if (value < 0) {
        throw new IOException(file + " holds a negative counter: " + text.trim());
      }
      return value;
    } catch (NumberFormatException e) {
      throw new IOException(file + " does not hold an integer counter: '" + text.trim() + "'", e);
    }
  }

  static String describe(Path file, IOException e) {
    if (e instanceof AccessDeniedException) {
      return "cannot read "
          + file
          + ": permission denied. Since CVE-2020-8694 (Platypus) energy_uj is readable by root only"
          + " (0400); run the daemon as root or grant it read access with a udev rule, and never"
          + " to units (the counter is a power side channel)";
    }
    return "cannot read " + file + ": " + e;
  }

  @Override
  DomainCount read(Zone zone, long atNs) throws MeterException {
    long raw;
    try {
      raw = parseCounter(zone.energyFile, reader.read(zone.energyFile));
    } catch (IOException e) {
      throw new MeterException(describe(zone.energyFile, e), e);
    }
    try {
      zone.total += CounterArithmetic.wrappingDelta(zone.previous, raw, zone.max);
    } catch (IllegalArgumentException e) {
      throw new MeterException(zone.energyFile + ": " + e.getMessage(), e);
    }
    zone.previous = raw;
    return new DomainCount(zone.total, false);
  }

  @Override
  public void close() {
    // nothing held open between samples
  }

  /** One zone's fixed facts and its unfolded counter. */
  static final class Zone {
    final MeterDomain domain;
    final Path energyFile;
    final long max;
    long previous;
    long total;

    Zone(MeterDomain domain, Path energyFile, long max, long baseline) {
      this.domain = domain;
      this.energyFile = energyFile;
      this.max = max;
      this.previous = baseline;
    }
  }
}
