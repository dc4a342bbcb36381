package io.sandboxd.attest;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Supplier;

/**
 * A seeded generator for property tests in plain JUnit: try {@code i} of a property draws from its
 * own fixed seed {@code i}, and a failure names that seed ({@code -Dseeded.seed=i} reruns only it).
 * Draws lean towards the edges of their range (bounds, 0, ±1), as a property tester would. Shared
 * with other modules' tests through this module's test-jar.
 */
public final class Seeded {
  /** One try of a property. */
  @FunctionalInterface
  public interface Try {
    void run(Seeded g) throws Exception;
  }

  private final long seed;
  private final Random random;

  public Seeded(long seed) {
    this.seed = seed;
    this.random = new Random(seed);
  }

  public long seed() {
    return seed;
  }

  public Random random() {
    return random;
  }

  /** Runs {@code tries} tries, seeds 1..tries; the first failure is rethrown naming its seed. */
  public static void repeat(int tries, Try body) {
    String only = System.getProperty("seeded.seed");
    if (only != null && !only.isBlank()) {
      once(Long.parseLong(only.strip()), body);
      return;
    }
    for (long seed = 1; seed <= tries; seed++) {
      once(seed, body);
    }
  }

  /** Runs the try of one seed. */
  public static void once(long seed, Try body) {
    try {
      body.run(new Seeded(seed));
    } catch (Exception | AssertionError e) {
      throw new AssertionError(
          "seed " + seed + " (rerun with -Dseeded.seed=" + seed + "): " + e, e);
    }
  }

  /** A long in [lo, hi], one draw in eight taken from the range's edges. */
  public long longBetween(long lo, long hi) {
    if (random.nextInt(8) == 0) {
      long[] edges = {lo, hi, lo + 1, hi - 1, 0, 1, -1};
      long e = edges[random.nextInt(edges.length)];
      if (e >= lo && e <= hi) {
        return e;
      }
    }
    long span = hi - lo + 1;
    if (span > 0) {
      return lo + Math.floorMod(random.nextLong(), span);
    }
    long v; // the span overflows a long: draw until in range (at least half of all longs are)
    do {
      v = random.nextLong();
    } while (v < lo || v > hi);
    return v;
  }

  public int intBetween(int lo, int hi) {
    return (int) longBetween(lo, hi);
  }

  /** Any long, edges included. */
  public long anyLong() {
    return random.nextInt(8) == 0
        ? pick(Long.MIN_VALUE, Long.MAX_VALUE, 0L, 1L, -1L)
        : random.nextLong();
  }

  public boolean bool() {
    return random.nextBoolean();
  }

  /** True with probability {@code p}. */
  public boolean chance(double p) {
    return random.nextDouble() < p;
  }

  @SafeVarargs
  public final <T> T pick(T... values) {
    return values[random.nextInt(values.length)];
  }

  public <T> T pick(List<T> values) {
    return values.get(random.nextInt(values.size()));
  }

  /** A list of {@code min..max} elements, the empty and the longest list included as edges. */
  public <T> List<T> list(int min, int max, Supplier<T> element) {
    int n = intBetween(min, max);
    List<T> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(element.get());
    }
    return out;
  }

  /** {@code null} with probability {@code p}, else a value. */
  public <T> T orNull(double p, Supplier<T> value) {
    return chance(p) ? null : value.get();
  }

  public byte[] bytes(int minLength, int maxLength) {
    byte[] b = new byte[intBetween(minLength, maxLength)];
    random.nextBytes(b);
    return b;
  }

  /** A string of {@code min..max} characters, each one of {@code alphabet}. */
  public String string(int min, int max, String alphabet) {
    int n = intBetween(min, max);
    StringBuilder sb = new StringBuilder(n);
    for (int i = 0; i < n; i++) {
      sb.append(alphabet.charAt(random.nextInt(alphabet.length())));
    }
    return sb.toString();
  }

  /** A string of up to {@code max} characters, each drawn from one of the inclusive ranges. */
  public String string(int max, char[]... ranges) {
    int n = intBetween(0, max);
    StringBuilder sb = new StringBuilder(n);
    for (int i = 0; i < n; i++) {
      char[] r = ranges[random.nextInt(ranges.length)];
      sb.append((char) intBetween(r[0], r[1]));
    }
    return sb.toString();
  }
}
