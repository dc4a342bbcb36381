package io.sandboxd.daemon;

import io.sandboxd.executor.HostFaults;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The daemon's log of what units cannot tell the operator (a full disk under kv_put or
 * storage_write, a write refused to keep the disk's reserve): one line when a call or store first
 * reports, then one a period for each with how many more there were, since a unit decides how often
 * it calls.
 */
final class HostFaultLog implements HostFaults {
  private static final Logger LOG = Logger.getLogger(HostFaultLog.class.getName());

  /** The most characters of one report kept: a failure's text may echo a unit's long path. */
  static final int MAX_CHARS = 1024;

  // Keyed by the executor's own fixed names (imports, stores), so this stays small.
  private final Map<String, ReportPace> paces = new ConcurrentHashMap<>();

  @Override
  public void told(String call, String what) {
    paces
        .computeIfAbsent(call, c -> new ReportPace())
        .log(LOG, Level.WARNING, line(call + ": " + what), null);
  }

  /**
   * {@code text} as one log line: a failure's text may name a file by the path a unit chose, and
   * storage paths may hold control characters, so each is written as {@code \\uXXXX} (no unit
   * writes a line of its own into the node's log), and the line is cut at {@link #MAX_CHARS}.
   */
  static String line(String text) {
    StringBuilder out = new StringBuilder(Math.min(text.length(), MAX_CHARS) + 16);
    int i = 0;
    for (; i < text.length() && out.length() < MAX_CHARS; i++) {
      char c = text.charAt(i);
      if (Character.isISOControl(c)) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    if (i < text.length()) {
      out.append("... (").append(text.length()).append(" characters)");
    }
    return out.toString();
  }
}
