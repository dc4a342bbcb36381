package io.sandboxd.daemon.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** `sandboxctl report`'s own input: times, and what it says when no daemon answers. */
class ReportCommandTest {
  @TempDir Path dir;

  @Test
  void timesAreInstantsDatesOrEpochMilliseconds() {
    assertEquals(
        Instant.parse("2026-12-01T10:00:00Z").toEpochMilli(),
        ReportCommand.time("2026-12-01T10:00:00Z", "--since", false).getAsLong());
    long day = Instant.parse("2026-12-01T00:00:00Z").toEpochMilli();
    assertEquals(day, ReportCommand.time("2026-12-01", "--since", false).getAsLong());
    assertEquals(day + 86_399_999L, ReportCommand.time("2026-12-01", "--until", true).getAsLong());
    assertEquals(1234L, ReportCommand.time("1234", "--since", false).getAsLong());
    assertTrue(ReportCommand.time(null, "--since", false).isEmpty());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> ReportCommand.time("yesterday", "--until", true));
    assertTrue(e.getMessage().startsWith("--until: \"yesterday\""), e.getMessage());
  }

  @Test
  void noDaemonIsUnusableAndSaysWhere() {
    PrintStream err = System.err;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    System.setErr(new PrintStream(buf, true, StandardCharsets.UTF_8));
    int exit;
    try {
      exit =
          Sandboxctl.commandLine()
              .execute(
                  "report",
                  "--out",
                  dir.resolve("out").toString(),
                  "--socket",
                  dir.resolve("none.sock").toString());
    } finally {
      System.setErr(err);
    }
    assertEquals(Sandboxctl.UNUSABLE, exit);
    String said = buf.toString(StandardCharsets.UTF_8);
    assertTrue(said.contains("sandboxctl report: no daemon at " + dir.resolve("none.sock")), said);
  }

  @Test
  void aBadSignerNamesTheOption() {
    assertEquals(
        Sandboxctl.UNUSABLE,
        Sandboxctl.commandLine().execute("report", "--signer", "zz", "--socket", dir.toString()));
  }
}
