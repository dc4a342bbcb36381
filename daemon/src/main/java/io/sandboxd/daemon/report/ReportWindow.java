package io.sandboxd.daemon.report;

import java.util.OptionalLong;

/**
 * Which runs a report covers: started in [sinceMs, untilMs] (either end open) and, when given,
 * submitted by one uid.
 */
public record ReportWindow(OptionalLong sinceMs, OptionalLong untilMs, OptionalLong submitter) {
  /** Every run. */
  public static final ReportWindow ALL =
      new ReportWindow(OptionalLong.empty(), OptionalLong.empty(), OptionalLong.empty());

  /** Whether a run started at {@code ms} falls inside the time bounds. */
  public boolean covers(long ms) {
    return (sinceMs.isEmpty() || ms >= sinceMs.getAsLong())
        && (untilMs.isEmpty() || ms <= untilMs.getAsLong());
  }

  /** Whether a run by {@code uid} (empty: not recorded) is one the report is about. */
  public boolean admits(OptionalLong uid) {
    return submitter.isEmpty() || (uid.isPresent() && uid.getAsLong() == submitter.getAsLong());
  }
}
