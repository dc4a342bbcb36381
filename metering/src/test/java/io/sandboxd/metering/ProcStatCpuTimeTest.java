package io.sandboxd.metering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The kept-open reading of /proc/stat against the plain one it replaced. */
class ProcStatCpuTimeTest {
  @TempDir Path dir;

  @Test
  void aKeptDescriptorReadsTheFileAsItIsNow() throws IOException {
    Path stat = dir.resolve("stat");
    Files.writeString(stat, "cpu  100 20 30 5000 40 5 6 7 50 0\nintr 1 2\n");
    ProcStatCpuTime t = new ProcStatCpuTime(stat);
    assertEquals(168 * 10_000_000L, t.busyNs());
    // Rewritten in place, as procfs regenerates it: the same instance sees the new counters.
    Files.writeString(stat, "cpu  200 20 30 5000 40 5 6 7 50 0\n");
    assertEquals(268 * 10_000_000L, t.busyNs());
    // Replaced by another file (a new inode) after a failed read: the next read opens it again.
    Files.delete(stat);
    Files.writeString(stat, "cpu  1 1 1 1 1 1 1 1\n");
    assertEquals(268 * 10_000_000L, t.busyNs(), "the descriptor still names the first file");
  }

  @Test
  void aFailedReadIsRetriedFromTheFile() throws IOException {
    Path stat = dir.resolve("stat");
    ProcStatCpuTime t = new ProcStatCpuTime(stat);
    assertThrows(IOException.class, t::busyNs);
    Files.writeString(stat, "cpu 1 2 3 4 5 6 7\n");
    assertEquals((1 + 2 + 3 + 6 + 7) * 10_000_000L, t.busyNs());
  }

  @Test
  void aFirstLineLongerThanTheHeadIsReadWholeAndRefusedByName() throws IOException {
    Path stat = dir.resolve("stat");
    Files.writeString(stat, "cpu " + "1 ".repeat(400) + "\n");
    // 400 counters: the first eight are summed as before, the rest ignored.
    assertEquals(6 * 10_000_000L, new ProcStatCpuTime(stat).busyNs());
    Files.writeString(stat, "cpux" + " 9".repeat(400) + "\n");
    IOException e = assertThrows(IOException.class, () -> new ProcStatCpuTime(stat).busyNs());
    assertTrue(e.getMessage().contains("aggregate cpu line"), e.getMessage());
  }

  @Test
  void badCountersAreNamed() throws IOException {
    Path stat = dir.resolve("stat");
    for (String line : new String[] {"cpu 1 2 x 4 5 6 7", "cpu 1 2 3", "", "cpu0 1 2 3 4 5 6 7"}) {
      Files.writeString(stat, line + "\n");
      IOException e = assertThrows(IOException.class, () -> new ProcStatCpuTime(stat).busyNs());
      assertTrue(e.getMessage().startsWith(stat + ": "), e.getMessage());
    }
    Files.writeString(stat, "cpu 9223372036854775807 1 0 0 0 0 0 0\n");
    assertThrows(IOException.class, () -> new ProcStatCpuTime(stat).busyNs());
  }

  /** Seeded lines of random spacing and counters: the same sum as a plain split would give. */
  @Test
  void agreesWithASplitOnRandomLines() throws IOException {
    Random r = new Random(0x5eed_57a7L);
    Path stat = dir.resolve("stat");
    ProcStatCpuTime kept = new ProcStatCpuTime(stat);
    for (int round = 0; round < 500; round++) {
      int fields = 7 + r.nextInt(4);
      StringBuilder line = new StringBuilder(r.nextBoolean() ? "" : " ").append("cpu");
      long[] v = new long[fields + 1];
      for (int i = 1; i <= fields; i++) {
        v[i] = r.nextInt(4) == 0 ? 0 : (long) (r.nextDouble() * 1e10);
        line.append(r.nextBoolean() ? " " : "\t  ").append(v[i]);
      }
      Files.writeString(stat, line + (r.nextBoolean() ? "\n" : "\ncpu0 1 2 3\n"));
      String[] split = line.toString().trim().split("\\s+", -1);
      long expected = 0;
      for (int i : new int[] {1, 2, 3, 6, 7}) {
        expected += Long.parseLong(split[i]);
      }
      if (split.length > 8) {
        expected += Long.parseLong(split[8]);
      }
      assertEquals(expected * 10_000_000L, kept.busyNs(), line.toString());
      assertEquals(
          expected * 10_000_000L,
          new ProcStatCpuTime(stat, 100, SysfsReader.files()).busyNs(),
          line.toString());
    }
  }

  @Test
  void thisHostsProcStatGrowsThroughOneDescriptor() throws IOException {
    ProcStatCpuTime t = new ProcStatCpuTime(ProcStatCpuTime.DEFAULT_PATH);
    long first = t.busyNs();
    assertTrue(first > 0);
    long deadline = System.nanoTime() + 2_000_000_000L;
    long now = first;
    // Busy until a tick passes: the kept descriptor must not hand back a frozen first reading.
    while (now == first && System.nanoTime() < deadline) {
      now = t.busyNs();
    }
    assertTrue(now > first, "no tick seen through the kept descriptor in 2 s");
  }
}
