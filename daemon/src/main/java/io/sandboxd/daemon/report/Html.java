package io.sandboxd.daemon.report;

import io.sandboxd.attest.Blake3;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/** Escaping, formatting and the shared style of the report's pages (no scripts, no fetches). */
final class Html {
  private Html() {}

  /** Inline style shared by every page: the pages load nothing else. */
  static final String STYLE =
      "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}"
          + "h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}"
          + "table{border-collapse:collapse;margin:8px 0}"
          + "td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}"
          + "td.n{text-align:right;font-variant-numeric:tabular-nums}"
          + "code,pre{font:12px ui-monospace,monospace}pre{background:#f6f6f6;padding:8px;"
          + "overflow-x:auto;white-space:pre-wrap;word-break:break-all}"
          + ".bad{color:#b71c1c;font-weight:bold}.ok{color:#1b5e20;font-weight:bold}"
          + ".prov-HwShunt{color:#1565c0}.prov-ModelBased{color:#00897b}"
          + ".prov-Estimator{color:#9e9d24}"
          + "ol.timeline{list-style:none;padding-left:0;border-left:3px solid #888}"
          + "ol.timeline li{margin:0 0 10px 0;padding-left:12px}"
          + ".kind{display:inline-block;min-width:70px;font-weight:bold}"
          + "figure{margin:12px 0}";

  /** {@code s} safe as HTML text and attribute values. */
  static String esc(String s) {
    StringBuilder b = new StringBuilder(s.length() + 16);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '&' -> b.append("&amp;");
        case '"' -> b.append("&quot;");
        case '\'' -> b.append("&#39;");
        default -> b.append(c);
      }
    }
    return b.toString();
  }

  /** An instant in ms since the epoch, in UTC. */
  static String time(long ms) {
    return DateTimeFormatter.ISO_INSTANT.withZone(ZoneOffset.UTC).format(Instant.ofEpochMilli(ms));
  }

  /** A µJ figure with a thousands separator, exact (no rounding: these are signed integers). */
  static String uj(long v) {
    return String.format(java.util.Locale.ROOT, "%,d", v);
  }

  /**
   * The file name of a run's page: the run id when it is a plain token, else its BLAKE3 (a run id
   * comes from the daemon and must not name a path outside the report).
   */
  static String runFile(String runId) {
    return runId.matches("[A-Za-z0-9_-]{1,128}")
        ? runId
        : Blake3.hex(runId.getBytes(StandardCharsets.UTF_8));
  }

  /** Opening of a page with its title. */
  static String head(String title) {
    return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        + "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';"
        + " style-src 'unsafe-inline'; img-src data:\">"
        + "<title>"
        + esc(title)
        + "</title><style>"
        + STYLE
        + "</style></head><body>\n";
  }

  static final String TAIL = "</body></html>\n";
}
