package io.sandboxd.daemon.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RunIdsTest {
  @Test
  void idsAreTwelveHexDigitsOfTheirMillisecondThenEightRandom() {
    RunIds ids = new RunIds();
    Set<String> suffixes = new HashSet<>();
    String previous = "";
    for (int i = 0; i < 2_000; i++) {
      long before = System.currentTimeMillis();
      String id = ids.next();
      long after = System.currentTimeMillis();
      assertTrue(id.matches("[0-9a-f]{20}"), id);
      long ms = Long.parseLong(id.substring(0, 12), 16);
      assertTrue(ms >= before && ms <= after, id + " outside [" + before + ", " + after + "]");
      assertEquals(String.format("%012x", ms), id.substring(0, 12));
      // Time-ordered: a later id never sorts before an earlier one's millisecond.
      assertTrue(previous.isEmpty() || id.substring(0, 12).compareTo(previous) >= 0, id);
      previous = id.substring(0, 12);
      suffixes.add(id.substring(12));
    }
    // Random, not a counter: 2,000 draws of 32 bits repeat with odds about 1 in 2,000.
    assertTrue(suffixes.size() > 1_990, "only " + suffixes.size() + " distinct random parts");
  }

  @Test
  void idsUnderAClockThatStandsStillAreAllDistinctAndStayOrdered() {
    RunIds ids = new RunIds(() -> 1_000);
    Set<String> seen = new HashSet<>();
    String previous = "";
    int n = 3 * RunIds.MAX_PER_MS + 5;
    for (int i = 0; i < n; i++) {
      String id = ids.next();
      assertTrue(seen.add(id), "drawn twice: " + id);
      assertTrue(id.substring(0, 12).compareTo(previous) >= 0, id + " after " + previous);
      previous = id.substring(0, 12);
    }
    // Past MAX_PER_MS in one millisecond the next is taken early: what is held stays bounded.
    assertEquals(String.format("%012x", 1_003), previous);
  }

  @Test
  void aClockThatStepsBackNeverTakesTheIdsBackInTime() {
    long[] now = {50_000};
    RunIds ids = new RunIds(() -> now[0]);
    String first = ids.next();
    now[0] = 20_000;
    Set<String> seen = new HashSet<>(Set.of(first));
    for (int i = 0; i < 1_000; i++) {
      String id = ids.next();
      assertEquals(first.substring(0, 12), id.substring(0, 12), id);
      assertTrue(seen.add(id), "drawn twice: " + id);
    }
    now[0] = 50_001;
    assertEquals(String.format("%012x", 50_001), ids.next().substring(0, 12));
  }
}
