package io.sandboxd.metering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Seeded;
import java.math.BigInteger;
import org.junit.jupiter.api.Test;

class CounterArithmeticTest {

  @Test
  void wireExampleWrapGives1350() {
    assertEquals(1350, CounterArithmetic.wrappingDelta(262_143_328_000L, 500, 262_143_328_850L));
  }

  @Test
  void noWrapIsPlainDifference() {
    assertEquals(250, CounterArithmetic.wrappingDelta(1000, 1250, 262_143_328_850L));
    assertEquals(0, CounterArithmetic.wrappingDelta(7, 7, 100));
  }

  @Test
  void valueAboveRangeIsRejectedNotTakenForAWrap() {
    assertThrows(
        IllegalArgumentException.class, () -> CounterArithmetic.wrappingDelta(500, 100, 400));
    assertThrows(
        IllegalArgumentException.class, () -> CounterArithmetic.wrappingDelta(-1, 100, 400));
  }

  @Test
  void delta32UnfoldsTheWrap() {
    assertEquals(0x200, CounterArithmetic.delta32(0xFFFF_FF00L, 0x100L));
  }

  @Test
  void mulShiftRightOverflowIsAnError() {
    assertThrows(
        ArithmeticException.class, () -> CounterArithmetic.mulShiftRight(Long.MAX_VALUE, 4, 1));
    assertEquals(Long.MAX_VALUE / 2 * 2, CounterArithmetic.mulShiftRight(Long.MAX_VALUE / 2, 4, 1));
  }

  @Test
  void mulDivUsesWideArithmetic() {
    // 2e9 µJ × 1e10 ns overflows 64 bits on the way
    assertEquals(
        1_000_000_000L, CounterArithmetic.mulDiv(2_000_000_000L, 10_000_000_000L, 20_000_000_000L));
  }

  @Test
  void wrappingDeltaRecoversAnyIncreaseBelowTheRange() {
    Seeded.repeat(
        1000,
        g -> {
          long max = g.longBetween(1, 1L << 45);
          long prevSeed = g.longBetween(0, 1L << 45);
          long deltaSeed = g.longBetween(0, 1L << 45);
          long prev = prevSeed % (max + 1);
          long delta = deltaSeed % max; // at most one wrap, and never a whole turn
          long cur = prev + delta <= max ? prev + delta : prev + delta - max;
          assertEquals(delta, CounterArithmetic.wrappingDelta(prev, cur, max));
        });
  }

  @Test
  void delta32RecoversAny32BitIncrease() {
    Seeded.repeat(
        1000,
        g -> {
          long prev = g.longBetween(0, 0xFFFF_FFFFL);
          long delta = g.longBetween(0, 0xFFFF_FFFFL);
          assertEquals(delta, CounterArithmetic.delta32(prev, (prev + delta) & 0xFFFF_FFFFL));
        });
  }

  @Test
  void mulShiftRightMatchesBigInteger() {
    Seeded.repeat(
        1000,
        g -> {
          long a = g.longBetween(0, Long.MAX_VALUE);
          long b = g.longBetween(0, 10_000_000L);
          int shift = g.intBetween(0, 63);
          BigInteger exact =
              BigInteger.valueOf(a).multiply(BigInteger.valueOf(b)).shiftRight(shift);
          if (exact.bitLength() < 64) {
            assertEquals(exact.longValueExact(), CounterArithmetic.mulShiftRight(a, b, shift));
          } else {
            assertThrows(
                ArithmeticException.class, () -> CounterArithmetic.mulShiftRight(a, b, shift));
          }
        });
  }

  @Test
  void powerIntegralHasNoDriftHoweverTheIntervalIsCut() {
    Seeded.repeat(
        1000,
        g -> {
          long milliwatts = g.longBetween(0, 2_000_000L);
          long totalNs = g.longBetween(1, 5_000_000_000L);
          int pieces = g.intBetween(1, 50);
          PowerIntegral whole = new PowerIntegral(PowerIntegral.MILLIWATT_NANOS_PER_UJ);
          whole.add(milliwatts, totalNs);
          PowerIntegral cut = new PowerIntegral(PowerIntegral.MILLIWATT_NANOS_PER_UJ);
          long step = totalNs / pieces;
          for (int i = 0; i < pieces - 1; i++) {
            cut.add(milliwatts, step);
          }
          cut.add(milliwatts, totalNs - step * (pieces - 1));
          assertEquals(whole.totalUj(), cut.totalUj());
          assertEquals(
              BigInteger.valueOf(milliwatts)
                  .multiply(BigInteger.valueOf(totalNs))
                  .divide(BigInteger.valueOf(1_000_000))
                  .longValueExact(),
              whole.totalUj());
        });
  }

  @Test
  void powerIntegralHandlesProductsBeyond64Bits() {
    PowerIntegral p = new PowerIntegral(PowerIntegral.MILLIWATT_NANOS_PER_UJ);
    p.add(Long.MAX_VALUE / 1000, 3000); // product ≈ 2.8e19
    assertEquals(
        BigInteger.valueOf(Long.MAX_VALUE / 1000)
            .multiply(BigInteger.valueOf(3000))
            .divide(BigInteger.valueOf(1_000_000))
            .longValueExact(),
        p.totalUj());
  }

  @Test
  void provenanceWorstIsTheLessTrustworthy() {
    assertEquals(
        Provenance.ModelBased, Provenance.worst(Provenance.HwShunt, Provenance.ModelBased));
    assertEquals(Provenance.Estimator, Provenance.worst(Provenance.Estimator, Provenance.HwShunt));
    assertEquals(Provenance.HwShunt, Provenance.worst(Provenance.HwShunt, Provenance.HwShunt));
    assertEquals(
        Provenance.Estimator, Provenance.worst(Provenance.ModelBased, Provenance.Estimator));
  }
}
