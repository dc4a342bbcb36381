package io.sandboxd.metering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

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

  /** A first read, a step of the clock, then a second read that hands out {@code expected}. */
  @ParameterizedTest(name = "{0}")
  @CsvSource({
    "a source that steps back never lowers what was handed out, 500, 400, 2000000, 500",
    "a clock that steps back reads the source again, 10, 20, -1, 20",
  })
  void aSecondReadAfterTheClockSteps(String why, long first, long second, long step, long expected)
      throws Exception {
    give(first, second);
    assertEquals(first, shared.busyNs());
    clock.addAndGet(step);
    assertEquals(expected, shared.busyNs());
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
