package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * A report that echoes a unit's path, or a remote party's text, is one line of the node's log, of
 * bounded length.
 */
class LogLineTest {
  @Test
  void aUnitsPathWritesNoLineOfItsOwnIntoTheLog() {
    String path = "/state/storage/m/a\nWARNING: forged\r\u001b[2J";
    String line = LogLine.of("storage_write: failed: " + path + ": No space left on device");
    assertEquals(
        "storage_write: failed: /state/storage/m/a\\u000aWARNING: forged\\u000d\\u001b[2J:"
            + " No space left on device",
        line);
    assertTrue(line.lines().count() == 1, line);
  }

  @Test
  void aLongReportIsCutSayingHowLongItWas() {
    String line = LogLine.of("x".repeat(100_000));
    assertTrue(line.length() < LogLine.MAX_CHARS + 40, "" + line.length());
    assertTrue(line.endsWith("... (100000 characters)"), line.substring(line.length() - 40));
  }
}
