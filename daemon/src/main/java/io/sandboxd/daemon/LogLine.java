package io.sandboxd.daemon;

/**
 * Text that a unit or a remote party chose, made into one line of the node's log: control
 * characters written as {@code \\uXXXX}, so no one writes a line of their own into the log, and the
 * line cut at {@link #MAX_CHARS}.
 */
public final class LogLine {
  /** The most characters of one line kept: a failure's text may echo a long name. */
  public static final int MAX_CHARS = 1024;

  private LogLine() {}

  /** {@code text} as one log line of bounded length. */
  public static String of(String text) {
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
