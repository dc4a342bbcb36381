package io.sandboxd.metering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.sandboxd.attest.Provenance;
import java.math.BigInteger;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
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

  @Property
  void wrappingDeltaRecoversAnyIncreaseBelowTheRange(
      @ForAll @LongRange(min = 1, max = 1L << 45) long max,
      @ForAll @LongRange(min = 0, max = 1L << 45) long prevSeed,
      @ForAll @LongRange(min = 0, max = 1L << 45) long deltaSeed) {
    long prev = prevSeed % (max + 1);
    long delta = deltaSeed % max; // at most one wrap, and never a whole turn
    long cur = prev + delta <= max ? prev + delta : prev + delta - max;
    assertEquals(delta, CounterArithmetic.wrappingDelta(prev, cur, max));
  }

  @Property
  void delta32RecoversAny32BitIncrease(
      @ForAll @LongRange(min = 0, max = 0xFFFF_FFFFL) long prev,
      @ForAll @LongRange(min = 0, max = 0xFFFF_FFFFL) long delta) {
    assertEquals(delta, CounterArithmetic.delta32(prev, (prev + delta) & 0xFFFF_FFFFL));
  }

  @Property
  void mulShiftRightMatchesBigInteger(
      @ForAll @LongRange(min = 0, max = Long.MAX_VALUE) long a,
      @ForAll @LongRange(min = 0, max = 10_000_000L) long b,
      @ForAll @IntRange(min = 0, max = 63) int shift) {
    BigInteger exact = BigInteger.valueOf(a).multiply(BigInteger.valueOf(b)).shiftRight(shift);
    if (exact.bitLength() < 64) {
      assertEquals(exact.longValueExact(), CounterArithmetic.mulShiftRight(a, b, shift));
    } else {
      assertThrows(ArithmeticException.class, () -> CounterArithmetic.mulShiftRight(a, b, shift));
    }
  }

  @Property
  void powerIntegralHasNoDriftHoweverTheIntervalIsCut(
      @ForAll @LongRange(min = 0, max = 2_000_000L) long milliwatts,
      @ForAll @LongRange(min = 1, max = 5_000_000_000L) long totalNs,
      @ForAll @IntRange(min = 1, max = 50) int pieces) {
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
