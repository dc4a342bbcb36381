package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The property-test generator: failures name their seed, a seed replays the same draws. */
class SeededTest {
  @Test
  void aFailingTryNamesItsSeedAndStopsThere() {
    List<Long> seen = new ArrayList<>();
    AssertionError e =
        assertThrows(
            AssertionError.class,
            () ->
                Seeded.repeat(
                    10,
                    g -> {
                      seen.add(g.seed());
                      assertTrue(g.seed() < 3, "too big");
                    }));
    assertTrue(e.getMessage().startsWith("seed 3 "), e.getMessage());
    assertTrue(e.getMessage().contains("too big"), e.getMessage());
    assertEquals(List.of(1L, 2L, 3L), seen);
  }

  @Test
  void aSeedReplaysTheSameDraws() {
    Seeded a = new Seeded(42);
    Seeded b = new Seeded(42);
    for (int i = 0; i < 100; i++) {
      assertEquals(a.longBetween(-5, Long.MAX_VALUE), b.longBetween(-5, Long.MAX_VALUE));
    }
  }

  @Test
  void drawsStayInRangeAndReachTheEdges() {
    Seeded g = new Seeded(7);
    boolean lo = false;
    boolean hi = false;
    for (int i = 0; i < 2000; i++) {
      long v = g.longBetween(-3, Long.MAX_VALUE);
      assertTrue(v >= -3, "below range: " + v);
      lo |= v == -3;
      hi |= v == Long.MAX_VALUE;
    }
    assertTrue(lo && hi, "edges reached: " + lo + ", " + hi);
  }
}
