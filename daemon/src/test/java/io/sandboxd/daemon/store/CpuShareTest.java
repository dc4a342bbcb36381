package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The background share of a core: pacing sleeps at least as long as the share requires, and the
 * idle share holds only while the node is idle.
 */
class CpuShareTest {
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  private static long burn(long cpuNanos) {
    long start = THREADS.getCurrentThreadCpuTime();
    long x = 0;
    while (THREADS.getCurrentThreadCpuTime() - start < cpuNanos) {
      for (int i = 0; i < 10_000; i++) {
        x += i * 31L ^ x;
      }
    }
    return x;
  }

  @Test
  void aTenPercentShareSleepsTenTimesTheCpuItUsed() throws Exception {
    CpuShare share = new CpuShare(10);
    long wall0 = System.nanoTime();
    long cpu;
    try (CpuShare.Session s = share.begin()) {
      long cpu0 = THREADS.getCurrentThreadCpuTime();
      burn(20_000_000L);
      s.pace();
      cpu = THREADS.getCurrentThreadCpuTime() - cpu0;
    }
    long wall = System.nanoTime() - wall0;
    // A lower bound only: sleeping guarantees at least the time asked for.
    assertTrue(wall >= cpu * 10 - 5_000_000L, "wall " + wall + " ns for cpu " + cpu + " ns");
    CpuShare.Use use = share.use();
    assertTrue(use.percentOfOneCore() <= 10.5, use.toString());
    assertTrue(use.cpuNanos() >= 20_000_000L, use.toString());
  }

  @Test
  void aPaceGivesWayWhenAskedAndSaysSo() throws Exception {
    CpuShare share = new CpuShare(1);
    try (CpuShare.Session s = share.begin()) {
      burn(20_000_000L);
      // At 1% this debt is a sleep of about two seconds; it ends at the first look instead.
      assertFalse(s.pace(() -> true));
      int[] looks = {0};
      assertFalse(s.pace(() -> ++looks[0] > 2));
      assertTrue(looks[0] >= 3, "looked " + looks[0] + " times");
    }
    try (CpuShare.Session s = new CpuShare(100).begin()) {
      assertTrue(s.pace(() -> false));
      assertFalse(s.pace(() -> true));
    }
  }

  @Test
  void noCapNeverSleeps() throws Exception {
    CpuShare share = new CpuShare(100);
    try (CpuShare.Session s = share.begin()) {
      burn(5_000_000L);
      long t0 = System.nanoTime();
      s.pace();
      assertTrue(System.nanoTime() - t0 < 1_000_000_000L);
    }
  }

  @Test
  void whileIdleTheIdleShareHoldsAndItsCpuIsCountedApart() throws Exception {
    AtomicBoolean idle = new AtomicBoolean(true);
    CpuShare share = new CpuShare(1, 100, idle::get);
    long busySince;
    try (CpuShare.Session s = share.begin()) {
      burn(20_000_000L);
      // At 1% this debt would be a sleep of about two seconds; idle, there is none.
      long t0 = System.nanoTime();
      assertTrue(s.pace(() -> false));
      assertTrue(System.nanoTime() - t0 < 1_000_000_000L, "slept while idle");
      // Busy again: a new stretch, held to 1% from here on, not charged with the idle work.
      idle.set(false);
      busySince = THREADS.getCurrentThreadCpuTime();
      t0 = System.nanoTime();
      s.pace();
      assertTrue(System.nanoTime() - t0 < 1_000_000_000L, "slept off the idle stretch's CPU");
      burn(5_000_000L);
      long cpu0 = THREADS.getCurrentThreadCpuTime();
      t0 = System.nanoTime();
      s.pace();
      long slept = System.nanoTime() - t0;
      // About 5 ms of CPU at 1%: half a second at least (a lower bound: sleeps may run long).
      assertTrue(slept >= 400_000_000L, "slept only " + slept + " ns");
      // It sleeps, it does not spin: waking up each step costs some CPU (more on a loaded machine,
      // where each costs up to a fraction of a millisecond and the sleep runs longer to pay it),
      // never a tenth of the time slept.
      long used = THREADS.getCurrentThreadCpuTime() - cpu0;
      assertTrue(used * 10 < slept, "used " + used + " ns of CPU in " + slept + " ns of sleep");
    }
    long busy = THREADS.getCurrentThreadCpuTime() - busySince;
    CpuShare.Use use = share.use();
    assertTrue(use.idleCpuNanos() >= 20_000_000L, use.toString());
    // The busy stretch holds its own burn and what its sleep cost, not the idle one's burn: no more
    // than this thread used from the switch on.
    assertTrue(use.cpuNanos() >= 5_000_000L, use.toString());
    assertTrue(use.cpuNanos() <= busy + 1_000_000L, busy + " ns from the switch on; " + use);
  }

  @Test
  void aSleepUnderTheShareEndsWhenTheNodeTurnsIdle() throws Exception {
    AtomicBoolean idle = new AtomicBoolean(false);
    try (CpuShare.Session s = new CpuShare(1, 100, idle::get).begin()) {
      burn(50_000_000L);
      // About five seconds of sleep at 1%; the node turns idle after 200 ms.
      Thread turn =
          new Thread(
              () -> {
                try {
                  Thread.sleep(200);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
                idle.set(true);
              });
      long t0 = System.nanoTime();
      turn.start();
      assertTrue(s.pace(() -> false));
      long slept = System.nanoTime() - t0;
      turn.join();
      assertTrue(slept >= 150_000_000L && slept < 3_000_000_000L, "slept " + slept + " ns");
    }
  }

  @Test
  void aShareOutsideOneToAHundredIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> new CpuShare(0));
    assertThrows(IllegalArgumentException.class, () -> new CpuShare(101));
    assertThrows(IllegalArgumentException.class, () -> new CpuShare(5, 101, () -> true));
    // An idle share below the share under load would slow the verifier when nothing else runs.
    assertThrows(IllegalArgumentException.class, () -> new CpuShare(20, 10, () -> true));
  }
}
