package io.sandboxd.metering;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Node CPU time from the aggregate {@code cpu} line of /proc/stat: user + nice + system + irq +
 * softirq + steal, in clock ticks (guest time is already inside user and nice; idle and iowait are
 * not busy).
 */
public final class ProcStatCpuTime implements NodeCpuTime {
  /** The default file. */
  public static final Path DEFAULT_PATH = Path.of("/proc/stat");

  /** USER_HZ on every mainstream Linux build ({@code getconf CLK_TCK}). */
  public static final long DEFAULT_TICKS_PER_SECOND = 100;

  private final Path path;
  private final long nsPerTick;
  private final SysfsReader reader;

  public ProcStatCpuTime(Path path, long ticksPerSecond, SysfsReader reader) {
    if (ticksPerSecond <= 0 || 1_000_000_000L % ticksPerSecond != 0) {
      throw new IllegalArgumentException(
          "ticksPerSecond must divide 10^9 and be positive: " + ticksPerSecond);
    }
    this.path = path;
    this.nsPerTick = 1_000_000_000L / ticksPerSecond;
    this.reader = reader;
  }

  public ProcStatCpuTime(Path path) {
    this(path, DEFAULT_TICKS_PER_SECOND, SysfsReader.files());
  }

  @Override
  public long busyNs() throws IOException {
    String text = reader.read(path);
    int end = text.indexOf('\n');
    String line = end < 0 ? text : text.substring(0, end);
    String[] f = line.trim().split("\\s+", -1);
    if (f.length < 8 || !f[0].equals("cpu")) {
      throw new IOException(path + ": first line is not the aggregate cpu line: '" + line + "'");
    }
    try {
      long ticks = 0;
      // fields: cpu user nice system idle iowait irq softirq steal ...
      for (int i : new int[] {1, 2, 3, 6, 7}) {
        ticks = Math.addExact(ticks, Long.parseLong(f[i]));
      }
      if (f.length > 8) {
        ticks = Math.addExact(ticks, Long.parseLong(f[8]));
      }
      return Math.multiplyExact(ticks, nsPerTick);
    } catch (NumberFormatException e) {
      throw new IOException(path + ": non-numeric cpu field in '" + line + "'", e);
    }
  }
}
