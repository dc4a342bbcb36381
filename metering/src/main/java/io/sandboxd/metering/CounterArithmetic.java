package io.sandboxd.metering;

import java.math.BigInteger;

/** Integer arithmetic for energy counters: wrap unfolding and exact scaling without floats. */
public final class CounterArithmetic {
  private CounterArithmetic() {}

  /**
   * The increase of a counter that wraps after {@code max}, per WIRE.md §4.1: {@code cur - prev}
   * when it did not wrap, otherwise {@code (max - prev) + cur}. Assumes at most one wrap between
   * the two readings, which the sampling interval guarantees.
   *
   * @throws IllegalArgumentException when a value is negative or {@code prev} lies above the range
   */
  public static long wrappingDelta(long prev, long cur, long max) {
    if (prev < 0 || cur < 0 || max < 0) {
      throw new IllegalArgumentException(
          "counter values must be >= 0: prev=" + prev + " cur=" + cur + " max=" + max);
    }
    if (cur >= prev) {
      return cur - prev;
    }
    if (prev > max) {
      throw new IllegalArgumentException(
          "counter value " + prev + " lies above its range " + max + ": not a wrap");
    }
    return (max - prev) + cur;
  }

  /** The increase of a 32-bit hardware counter (RAPL MSRs), read as unsigned, modulo 2^32. */
  public static long delta32(long prev, long cur) {
    return (cur - prev) & 0xFFFF_FFFFL;
  }

  /**
   * {@code floor(a * b / 2^shift)} for non-negative {@code a}, {@code b}, exact over the full
   * 128-bit product.
   *
   * @throws ArithmeticException when the result does not fit in a long
   */
  public static long mulShiftRight(long a, long b, int shift) {
    if (a < 0 || b < 0 || shift < 0 || shift > 63) {
      throw new IllegalArgumentException(
          "mulShiftRight needs a, b >= 0 and 0 <= shift <= 63: " + a + ", " + b + ", " + shift);
    }
    long hi = Math.multiplyHigh(a, b);
    long lo = a * b;
    // with a, b < 2^63 the product is < 2^126, so hi is non-negative
    if (shift == 0) {
      if (hi != 0 || lo < 0) {
        throw new ArithmeticException("overflow in " + a + " * " + b);
      }
      return lo;
    }
    if ((hi >>> (shift - 1)) != 0) {
      throw new ArithmeticException("overflow in " + a + " * " + b + " >> " + shift);
    }
    return (hi << (64 - shift)) | (lo >>> shift);
  }

  /** {@code floor(a * b / c)} for non-negative {@code a}, {@code b} and positive {@code c}. */
  public static long mulDiv(long a, long b, long c) {
    if (a < 0 || b < 0 || c <= 0) {
      throw new IllegalArgumentException(
          "mulDiv needs a, b >= 0 and c > 0: " + a + ", " + b + ", " + c);
    }
    if (Math.multiplyHigh(a, b) == 0 && a * b >= 0) {
      return (a * b) / c;
    }
    return BigInteger.valueOf(a)
        .multiply(BigInteger.valueOf(b))
        .divide(BigInteger.valueOf(c))
        .longValueExact();
  }
}
