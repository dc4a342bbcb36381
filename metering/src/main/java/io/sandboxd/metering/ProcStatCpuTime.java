package io.sandboxd.metering;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

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

  // The aggregate line is ten counters of at most 20 digits: it always fits.
  private static final int HEAD_BYTES = 512;

  private final Path path;
  private final long nsPerTick;
  // Null: the real file, read through a descriptor kept open (see readFirstLine).
  private final SysfsReader reader;
  private FileChannel open;
  private final ByteBuffer head = ByteBuffer.allocate(HEAD_BYTES);

  /** Reads {@code path} through {@code reader} on every call (tests inject what root cannot). */
  public ProcStatCpuTime(Path path, long ticksPerSecond, SysfsReader reader) {
    this(java.util.Objects.requireNonNull(reader, "reader"), path, ticksPerSecond);
  }

  /** Reads the file itself, keeping it open between calls. */
  public ProcStatCpuTime(Path path, long ticksPerSecond) {
    this(null, path, ticksPerSecond);
  }

  private ProcStatCpuTime(SysfsReader reader, Path path, long ticksPerSecond) {
    if (ticksPerSecond <= 0 || 1_000_000_000L % ticksPerSecond != 0) {
      throw new IllegalArgumentException(
          "ticksPerSecond must divide 10^9 and be positive: " + ticksPerSecond);
    }
    this.path = path;
    this.nsPerTick = 1_000_000_000L / ticksPerSecond;
    this.reader = reader;
  }

  public ProcStatCpuTime(Path path) {
    this(path, DEFAULT_TICKS_PER_SECOND);
  }

  @Override
  public synchronized long busyNs() throws IOException {
    String line = reader == null ? readFirstLine() : firstLineOf(reader.read(path));
    long[] f = new long[9];
    int n = fields(line, f);
    if (n < 8) {
      throw new IOException(path + ": first line is not the aggregate cpu line: '" + line + "'");
    }
    try {
      // fields: cpu user nice system idle iowait irq softirq steal ...
      long ticks = 0;
      for (int i : new int[] {1, 2, 3, 6, 7}) {
        ticks = Math.addExact(ticks, f[i]);
      }
      if (n > 8) {
        ticks = Math.addExact(ticks, f[8]);
      }
      return Math.multiplyExact(ticks, nsPerTick);
    } catch (ArithmeticException e) {
      throw new IOException(path + ": cpu counters overflow in '" + line + "'", e);
    }
  }

  /**
   * The first line, read at offset 0 of a descriptor kept open: procfs builds the file afresh for
   * every read from the start, so this is as new as an open, read and close, without the three
   * system calls and the whole file's copy that each run's two metering passes paid for.
   */
  private String readFirstLine() throws IOException {
    try {
      if (open == null) {
        open = FileChannel.open(path, StandardOpenOption.READ);
      }
      head.clear();
      int got = 0;
      while (head.hasRemaining()) {
        int r = open.read(head, got);
        if (r < 0) {
          break;
        }
        got += r;
        if (indexOfNewline(head.array(), got) >= 0) {
          break;
        }
      }
      byte[] a = head.array();
      int end = indexOfNewline(a, got);
      if (end < 0 && got == HEAD_BYTES) {
        // Not /proc/stat as the kernel writes it: read it all and report what it holds.
        return firstLineOf(new String(Files.readAllBytes(path), StandardCharsets.US_ASCII));
      }
      return new String(a, 0, end < 0 ? got : end, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      // A failed read is not kept: the next call opens the file again.
      closeQuietly();
      throw e;
    }
  }

  private void closeQuietly() {
    if (open != null) {
      try {
        open.close();
      } catch (IOException ignored) {
        // The descriptor is gone either way.
      }
      open = null;
    }
  }

  private static int indexOfNewline(byte[] a, int len) {
    for (int i = 0; i < len; i++) {
      if (a[i] == '\n') {
        return i;
      }
    }
    return -1;
  }

  private static String firstLineOf(String text) {
    int end = text.indexOf('\n');
    return end < 0 ? text : text.substring(0, end);
  }

  /**
   * Splits {@code line} at runs of white space into the {@code cpu} label (checked, stored as 0)
   * and up to eight counters; returns how many fields the line has, or -1 when it is not the
   * aggregate line. No regular expression: this runs twice a run.
   */
  private int fields(String line, long[] out) throws IOException {
    int n = 0;
    int i = 0;
    int len = line.length();
    while (true) {
      while (i < len && Character.isWhitespace(line.charAt(i))) {
        i++;
      }
      if (i == len) {
        return n;
      }
      int start = i;
      while (i < len && !Character.isWhitespace(line.charAt(i))) {
        i++;
      }
      if (n == 0) {
        if (!line.startsWith("cpu", start) || i - start != 3) {
          return -1;
        }
      } else if (n < out.length) {
        try {
          out[n] = Long.parseLong(line, start, i, 10);
        } catch (NumberFormatException e) {
          throw new IOException(path + ": non-numeric cpu field in '" + line + "'", e);
        }
      }
      n++;
    }
  }
}
