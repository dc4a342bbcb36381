package io.sandboxd.daemon.report;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Writes a report into a directory: index.html, and runs/RUN.html with runs/RUN.jsonl (the run's
 * records, for offline verification) for every verified run. Nothing is written for a run that did
 * not verify.
 */
public final class ReportSite {
  private ReportSite() {}

  /** What was written: files and bytes in all, and the front page's bytes. */
  public record Written(long files, long bytes, long indexBytes) {}

  /** Renders and writes the report of {@code records} into {@code dir} (created if absent). */
  public static Written write(Path dir, VerifiedRecords records, ReportContext ctx)
      throws IOException {
    ReportAggregates a = ReportAggregates.of(records.runs());
    Path runs = dir.resolve("runs");
    Files.createDirectories(runs);
    long files = 0;
    long bytes = 0;
    for (VerifiedRun r : records.runs()) {
      String name = Html.runFile(r.runId());
      bytes += put(runs.resolve(name + ".html"), RunPage.render(r));
      bytes += put(runs.resolve(name + ".jsonl"), RunPage.records(r));
      files += 2;
    }
    long index = put(dir.resolve("index.html"), ReportPage.render(records, a, ctx));
    return new Written(files + 1, bytes + index, index);
  }

  private static long put(Path p, String text) throws IOException {
    byte[] b = text.getBytes(StandardCharsets.UTF_8);
    Files.write(p, b);
    return b.length;
  }
}
