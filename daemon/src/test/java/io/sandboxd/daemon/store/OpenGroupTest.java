package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class OpenGroupTest {
  private static final int BITS = 6;

  /** What {@link OpenGroup#next} must return, from a plain list of every leaf put. */
  private static long expected(
      List<byte[]> prefixes, List<Boolean> once, byte[] raw, long from, long size) {
    for (long idx = from; idx < size; idx++) {
      byte[] p = prefixes.get((int) idx);
      if (once.get((int) idx) && java.util.Arrays.equals(p, 0, 4, raw, 0, 4)) {
        return idx;
      }
    }
    return -1;
  }

  @Test
  void nextFindsTheLeavesLoggedOnceWithTheSamePrefixAcrossGroups() {
    Random random = new Random(22);
    OpenGroup g = new OpenGroup(BITS);
    List<byte[]> prefixes = new ArrayList<>();
    List<Boolean> once = new ArrayList<>();
    for (int idx = 0; idx < 5 << BITS; idx++) {
      // Few distinct prefixes, so that matches, near misses (3 bytes alike) and repeats abound.
      byte[] raw = {1, 2, (byte) random.nextInt(2), (byte) random.nextInt(3), 9, 9};
      boolean loggedOnce = random.nextInt(4) != 0;
      g.put(idx, raw, loggedOnce);
      prefixes.add(raw);
      once.add(loggedOnce);
      long size = idx + 1;
      assertTrue(g.holds(size));
      long start = (size - 1) >> BITS << BITS;
      byte[] probe = {1, 2, (byte) random.nextInt(2), (byte) random.nextInt(3)};
      long from = start + random.nextInt((int) (size - start));
      assertEquals(
          expected(prefixes, once, probe, from, size), g.next(probe, from, size), "leaf " + idx);
    }
  }

  @Test
  void holdsOnlyTheGroupItWasLastPutIn() {
    OpenGroup g = new OpenGroup(BITS);
    byte[] raw = {7, 7, 7, 7};
    int group = 1 << BITS;
    assertTrue(g.holds(0), "an empty log has an empty open group");
    for (int idx = 0; idx < group + 3; idx++) {
      g.put(idx, raw, true);
    }
    assertTrue(g.holds(group + 3));
    // Back inside the first group (a rollback): its slots were reused by the second.
    assertFalse(g.holds(group - 1));
    assertTrue(g.holds(group), "at a group's first position there is nothing to hold");
    g.clear();
    assertFalse(g.holds(5));
    assertTrue(g.holds(0));
    // Put again from the start, the first group is held, its leaves found from the first.
    for (int idx = 0; idx < 5; idx++) {
      g.put(idx, raw, idx != 0);
    }
    assertTrue(g.holds(5));
    assertEquals(1, g.next(raw, 0, 5));
    assertEquals(-1, g.next(new byte[] {7, 7, 7, 8}, 0, 5));
  }
}
