package io.sandboxd.warmpool;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sandboxd.attest.Provenance;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Integer idle energy: apportioned by memory share, carried exactly across steps. */
class IdleEnergyTest {
  @Test
  void shareOfTheNodeDrawByMemory() {
    // 5 W for 60 s over a quarter of the node's memory: 75 J.
    assertEquals(75_000_000L, IdleEnergy.of(5_000, 1 << 20, 60_000, 4 << 20));
    assertEquals(0, IdleEnergy.of(0, 1 << 20, 60_000, 4 << 20));
    // No overflow at the extremes: 10 MW for a week over 16 TiB.
    assertEquals(
        10_000_000_000L * 604_800_000L / 16,
        IdleEnergy.of(10_000_000_000L, 1L << 40, 604_800_000L, 1L << 44));
  }

  @Test
  void accruingInStepsLosesNothing() {
    long seed = new Random().nextLong();
    Random r = new Random(seed);
    for (int t = 0; t < 200; t++) {
      long mw = 1 + r.nextInt(20_000);
      long bytes = 1 + r.nextInt(1 << 24);
      long node = bytes + r.nextInt(1 << 30);
      IdleEnergy e = new IdleEnergy(node);
      long total = 0;
      for (int k = 0; k < 50; k++) {
        long ms = r.nextInt(2_000);
        e.accrue(mw, bytes, ms);
        total += ms;
      }
      assertEquals(IdleEnergy.of(mw, bytes, total, node), e.microjoules(), "seed " + seed);
    }
  }

  @Test
  void meteredDrawIsTheLowestWindowAverageAndSaysSo() {
    AtomicLong uj = new AtomicLong();
    AtomicLong now = new AtomicLong();
    MeteredIdlePower p = new MeteredIdlePower(uj::get, now::get, 7_000);
    assertEquals(7_000, p.milliwatts());
    assertEquals(Provenance.Estimator, p.provenance());
    now.set(1_000);
    uj.set(20_000_000); // 20 J in 1 s: 20 W
    assertEquals(20_000, p.milliwatts());
    assertEquals(Provenance.ModelBased, p.provenance());
    now.set(3_000);
    uj.set(30_000_000); // 10 J in 2 s: 5 W
    assertEquals(5_000, p.milliwatts());
    now.set(4_000);
    uj.set(60_000_000); // busy again: the idle draw stays the lowest seen
    assertEquals(5_000, p.milliwatts());
  }
}
