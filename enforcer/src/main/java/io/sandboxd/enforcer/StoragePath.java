package io.sandboxd.enforcer;

import java.util.ArrayList;
import java.util.List;

/**
 * A normalized storage path (WIRE.md §3.1 step 1): {@code /}-separated, relative to the unit root;
 * a leading {@code /} is kept and must agree with the pattern. Empty segments (so {@code //} and a
 * trailing {@code /}), {@code .}, {@code ..} and NUL are refused; there is no case folding.
 */
public final class StoragePath {
  private final String text;
  private final boolean absolute;
  // bounds[2i] is the start and bounds[2i+1] the end (exclusive) of segment i in text
  private final int[] bounds;

  private StoragePath(String text, boolean absolute, int[] bounds) {
    this.text = text;
    this.absolute = absolute;
    this.bounds = bounds;
  }

  /** Normalizes {@code path}; throws {@link IllegalArgumentException} saying why it is refused. */
  public static StoragePath parse(String path) {
    int[] bounds = segmentBounds(path, "path");
    return new StoragePath(path, !path.isEmpty() && path.charAt(0) == '/', bounds);
  }

  /**
   * Splits {@code text} into segments under the rules shared by paths and patterns, returning
   * start/end pairs. Patterns reuse it so the two can never disagree about what a segment is.
   */
  static int[] segmentBounds(String text, String what) {
    if (text.isEmpty()) {
      throw new IllegalArgumentException("empty " + what);
    }
    int start = text.charAt(0) == '/' ? 1 : 0;
    if (start == text.length()) {
      return new int[0]; // "/" alone: the unit root
    }
    // one pass to count segments and find NUL, one to record them: paths are short and this is
    // on the hot path of every storage call
    int count = 1;
    for (int i = start; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '/') {
        count++;
      } else if (c == '\0') {
        throw new IllegalArgumentException(what + " contains NUL");
      }
    }
    int[] bounds = new int[count * 2];
    int seg = 0;
    int segStart = start;
    for (int i = start; i <= text.length(); i++) {
      if (i == text.length() || text.charAt(i) == '/') {
        if (i == segStart) {
          throw new IllegalArgumentException(
              what + " has an empty segment at character " + i + " (\"//\" or a trailing \"/\")");
        }
        int len = i - segStart;
        if ((len == 1 && text.charAt(segStart) == '.')
            || (len == 2 && text.charAt(segStart) == '.' && text.charAt(segStart + 1) == '.')) {
          throw new IllegalArgumentException(
              what + " has a \"" + text.substring(segStart, i) + "\" segment");
        }
        bounds[2 * seg] = segStart;
        bounds[2 * seg + 1] = i;
        seg++;
        segStart = i + 1;
      }
    }
    return bounds;
  }

  /** The path as given (already normal: normalization refuses rather than rewrites). */
  public String text() {
    return text;
  }

  /** True when the path starts with {@code /}. */
  public boolean absolute() {
    return absolute;
  }

  /** Number of segments. */
  public int size() {
    return bounds.length / 2;
  }

  /** Segment {@code i} as a string. */
  public String segment(int i) {
    return text.substring(bounds[2 * i], bounds[2 * i + 1]);
  }

  /** All segments. */
  public List<String> segments() {
    List<String> out = new ArrayList<>(size());
    for (int i = 0; i < size(); i++) {
      out.add(segment(i));
    }
    return out;
  }

  int start(int i) {
    return bounds[2 * i];
  }

  int end(int i) {
    return bounds[2 * i + 1];
  }

  @Override
  public String toString() {
    return text;
  }
}
