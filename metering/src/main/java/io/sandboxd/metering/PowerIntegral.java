package io.sandboxd.metering;

import java.math.BigInteger;

/**
 * Accumulates power × time into µJ exactly: the sub-µJ remainder is carried from one step to the
 * next, so many short steps add up to the same total as one long one (no drift).
 */
final class PowerIntegral {
  /** mW × ns = 10^-12 J = 10^-6 µJ. */
  static final long MILLIWATT_NANOS_PER_UJ = 1_000_000L;

  private final long divisor;
  private long totalUj;
  private long remainder;

  /**
   * @param divisor what one µJ is in the units passed to {@link #add}: {@link
   *     #MILLIWATT_NANOS_PER_UJ} for mW × ns, twice that for a trapezoid's (p0 + p1) × ns
   */
  PowerIntegral(long divisor) {
    if (divisor <= 0) {
      throw new IllegalArgumentException("divisor must be > 0: " + divisor);
    }
    this.divisor = divisor;
  }

  /** Adds {@code power * ns}; both must be non-negative. */
  void add(long power, long ns) {
    if (power < 0 || ns < 0) {
      throw new IllegalArgumentException("power and time must be >= 0: " + power + ", " + ns);
    }
    long quotient;
    long rest;
    if (Math.multiplyHigh(power, ns) == 0 && power * ns >= 0) {
      long product = power * ns;
      quotient = product / divisor;
      rest = product % divisor;
    } else {
      BigInteger[] qr =
          BigInteger.valueOf(power)
              .multiply(BigInteger.valueOf(ns))
              .divideAndRemainder(BigInteger.valueOf(divisor));
      quotient = qr[0].longValueExact();
      rest = qr[1].longValueExact();
    }
    long carried = remainder + rest; // < 2 * divisor, no overflow
    totalUj = Math.addExact(totalUj, Math.addExact(quotient, carried / divisor));
    remainder = carried % divisor;
  }

  long totalUj() {
    return totalUj;
  }
}
