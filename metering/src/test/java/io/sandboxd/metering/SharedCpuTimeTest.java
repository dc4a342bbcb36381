package io.sandboxd.metering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** One /proc/stat read serves every pass within its window; outside it the file is read again. */
class SharedCpuTimeTest {
  private final AtomicLong clock = new AtomicLong(5_000_000_000L);
  private final Deque<Object> readings = new ArrayDeque<>();
  private int reads;

  private final NodeCpuTime source =
      () -> {
        reads++;
        Object next = readings.removeFirst();
        if (next instanceof IOException e) {
          throw e;
        }
        return (Long) next;
      };

  private final SharedCpuTime shared = new SharedCpuTime(source, clock::get, 1_000_000L);

  /** What the source answers next, in order: a busy time, or an IOException to throw. */
  private void give(Object... next) {
    readings.addAll(java.util.List.of(next));
  }

  @Test
  void readsWithinTheWindowShareOneReadOfTheSource() throws Exception {
    give(100L, 250L);
    assertEquals(100L, shared.busyNs());
    clock.addAndGet(999_999L);
    assertEquals(100L, shared.busyNs());
    assertEquals(1, reads);
    clock.addAndGet(1L);
    assertEquals(250L, shared.busyNs());
    assertEquals(2, reads);
  }

  @Test
  void aFailedReadIsNotKeptAndTheNextCallReadsAgain() throws Exception {
    give(new IOException("/proc/stat: gone"), 300L);
    assertThrows(IOException.class, shared::busyNs);
    assertEquals(300L, shared.busyNs());
    assertEquals(2, reads);
  }

  @Test
  void aSourceThatStepsBackNeverLowersWhatWasHandedOut() throws Exception {
    give(500L, 400L);
    assertEquals(500L, shared.busyNs());
    clock.addAndGet(2_000_000L);
    assertEquals(500L, shared.busyNs());
  }

  @Test
  void aClockThatStepsBackReadsTheSourceAgain() throws Exception {
    give(10L, 20L);
    assertEquals(10L, shared.busyNs());
    clock.addAndGet(-1L);
    assertEquals(20L, shared.busyNs());
  }

  @Test
  void aZeroWindowReadsEveryTime() throws Exception {
    SharedCpuTime every = new SharedCpuTime(source, clock::get, 0);
    give(1L, 2L);
    assertEquals(1L, every.busyNs());
    assertEquals(2L, every.busyNs());
    assertEquals(2, reads);
  }
}
