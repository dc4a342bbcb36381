package io.sandboxd.metering;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Predicate;

/** Writes a powercap sysfs tree laid out like the kernel's into a temporary directory. */
final class PowercapFixture {
  /** A typical Intel range: 2^32 counts of 61.035 µJ. */
  static final long MAX = 262_143_328_850L;

  final Path root;

  PowercapFixture(Path root) {
    this.root = root;
  }

  PowercapFixture zone(String dir, String name, long energyUj) {
    return zone(dir, name, energyUj, MAX);
  }

  PowercapFixture zone(String dir, String name, long energyUj, long max) {
    Path z = root.resolve(dir);
    try {
      Files.createDirectories(z);
      write(z.resolve("name"), name + "\n");
      write(z.resolve("max_energy_range_uj"), max + "\n");
      write(z.resolve("energy_uj"), energyUj + "\n");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return this;
  }

  /** Two Intel server packages with core, uncore and dram, plus psys. */
  static PowercapFixture twoPackages(Path root) {
    return new PowercapFixture(root)
        .zone("intel-rapl:0", "package-0", 1_000)
        .zone("intel-rapl:0:0", "core", 100)
        .zone("intel-rapl:0:1", "uncore", 10)
        .zone("intel-rapl:0:2", "dram", 50)
        .zone("intel-rapl:1", "package-1", 2_000)
        .zone("intel-rapl:1:0", "core", 200)
        .zone("intel-rapl:1:1", "dram", 60)
        .zone("intel-rapl:2", "psys", 9_000);
  }

  void set(String dir, long energyUj) {
    try {
      write(root.resolve(dir).resolve("energy_uj"), energyUj + "\n");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  void add(String dir, long microjoules) {
    try {
      Path f = root.resolve(dir).resolve("energy_uj");
      long cur = Long.parseLong(Files.readString(f, StandardCharsets.US_ASCII).trim());
      write(f, (cur + microjoules) + "\n");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void write(Path f, String text) throws IOException {
    Files.writeString(f, text, StandardCharsets.US_ASCII);
  }

  /** The real files, except that a read of a file {@code refused} accepts is denied (EACCES). */
  static SysfsReader denying(Predicate<Path> refused) {
    return file -> {
      if (refused.test(file)) {
        throw new AccessDeniedException(file.toString());
      }
      return SysfsReader.files().read(file);
    };
  }
}
