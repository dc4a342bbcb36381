package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.List;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/** A failure that repeats is reported its first time, then once a period with the count held. */
class ReportPaceTest {
  @Test
  void aRepeatedFailureIsReportedFirstThenOnceAPeriod() {
    ReportPace pace = new ReportPace();
    long period = ReportPace.EVERY.toNanos();
    long t0 = 1_000_000_000L;
    assertEquals(0, pace.due(t0), "the first is reported");
    assertEquals(-1, pace.due(t0 + 1));
    assertEquals(-1, pace.due(t0 + period - 1));
    assertEquals(2, pace.due(t0 + period), "due again, with the count held back");
    assertEquals(-1, pace.due(t0 + period + 1));
    assertEquals(1, pace.due(t0 + 3 * period));
  }

  @Test
  void aThousandFailuresInAPeriodLogOneLineWithItsCause() {
    Logger log = Logger.getLogger(ReportPaceTest.class.getName() + ".paced");
    log.setUseParentHandlers(false);
    try (LogCapture captured = LogCapture.of(log.getName())) {
      ReportPace pace = new ReportPace();
      IllegalStateException first = new IllegalStateException("disk full");
      pace.log(log, Level.SEVERE, "failed: 0", first);
      for (int i = 1; i < 1000; i++) {
        pace.log(log, Level.SEVERE, "failed: " + i, new IllegalStateException("disk full"));
      }
      List<LogRecord> records = captured.records();
      assertEquals(1, records.size());
      assertEquals("failed: 0", records.get(0).getMessage());
      assertEquals(Level.SEVERE, records.get(0).getLevel());
      assertSame(first, records.get(0).getThrown());
    }
  }
}
