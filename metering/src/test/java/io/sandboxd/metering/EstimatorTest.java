package io.sandboxd.metering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EstimatorTest {
  @TempDir Path dir;

  @Test
  void cpuEstimateIsPowerTimesBusyCpuTimeAndOthersPowerTimesWallTime() throws Exception {
    AtomicLong busy = new AtomicLong(5_000_000_000L);
    ManualClock clock = new ManualClock();
    EstimatorModel model =
        new EstimatorModel(Map.of(DeviceClass.Cpu, 10_000L, DeviceClass.Npu, 2_000L));
    try (Estimator e =
        new Estimator(model, EnumSet.of(DeviceClass.Cpu, DeviceClass.Npu), busy::get, clock)) {
      assertEquals(2, e.domains().size());
      assertTrue(e.domains().stream().allMatch(d -> d.provenance() == Provenance.Estimator));
      assertEquals("estimate:Cpu", e.domains().get(0).id());
      busy.addAndGet(2_000_000_000L); // 2 CPU-seconds busy
      clock.advance(3_000_000_000L); // 3 s of wall time
      MeterSample s = e.sample();
      assertEquals(20_000_000, s.cumulativeUj(0)); // 10 W × 2 s
      assertEquals(6_000_000, s.cumulativeUj(1)); // 2 W × 3 s
    }
  }

  @Test
  void modelRejectsNegativePowerAndMissingClasses() {
    assertThrows(
        IllegalArgumentException.class, () -> new EstimatorModel(Map.of(DeviceClass.Cpu, -1L)));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            new Estimator(EstimatorModel.cpuOnly(), EnumSet.of(DeviceClass.Gpu), () -> 0, () -> 0));
  }

  @Test
  void procStatBusyTimeExcludesIdleAndIowait() throws IOException {
    Path stat = dir.resolve("stat");
    // user nice system idle iowait irq softirq steal guest guest_nice
    Files.writeString(stat, "cpu  100 20 30 5000 40 5 6 7 50 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n");
    long busyTicks = 100 + 20 + 30 + 5 + 6 + 7;
    assertEquals(busyTicks * 10_000_000L, new ProcStatCpuTime(stat).busyNs());
  }

  @Test
  void procStatThatIsNotProcStatIsAClearError() throws IOException {
    Path stat = dir.resolve("stat");
    Files.writeString(stat, "intr 1 2 3\n");
    IOException e = assertThrows(IOException.class, () -> new ProcStatCpuTime(stat).busyNs());
    assertTrue(e.getMessage().contains("aggregate cpu line"), e.getMessage());
  }

  @Test
  void thisHostsProcStatParses() throws IOException {
    long first = new ProcStatCpuTime(ProcStatCpuTime.DEFAULT_PATH).busyNs();
    assertTrue(first > 0);
    assertTrue(new ProcStatCpuTime(ProcStatCpuTime.DEFAULT_PATH).busyNs() >= first);
  }
}
