package io.sandboxd.enforcer;

import java.util.ArrayList;
import java.util.List;

/**
 * A storage allow-glob and its matching algorithm (WIRE.md §3.1, reading B of Q13), kept in this
 * one class: {@code **} matches zero or more whole segments, {@code *} elsewhere matches within one
 * segment, and a pattern that ends in {@code /*} matches one or more segments below its prefix.
 */
public final class Glob implements Comparable<Glob> {
  /**
   * Q13 reading B: a trailing {@code /*} is a prefix match (any depth, at least one segment). Set
   * to false to get reading A, where it matches exactly one segment.
   */
  static final boolean TRAILING_STAR_IS_PREFIX = true;

  private static final byte LITERAL = 0;
  private static final byte ONE = 1; // "*": exactly one segment
  private static final byte WILD = 2; // "a*b": one segment, '*' = [^/]*
  private static final byte DEEP = 3; // "**": zero or more segments

  private final String text;
  private final boolean absolute;
  private final byte[] kinds;
  private final String[] literals;
  private final String[][] parts;

  private Glob(String text, boolean absolute, byte[] kinds, String[] literals, String[][] parts) {
    this.text = text;
    this.absolute = absolute;
    this.kinds = kinds;
    this.literals = literals;
    this.parts = parts;
  }

  /**
   * Compiles {@code pattern}; throws {@link IllegalArgumentException} saying why it is malformed.
   */
  public static Glob parse(String pattern) {
    int[] bounds = StoragePath.segmentBounds(pattern, "glob");
    int n = bounds.length / 2;
    List<Byte> kinds = new ArrayList<>(n + 1);
    List<String> literals = new ArrayList<>(n + 1);
    List<String[]> parts = new ArrayList<>(n + 1);
    for (int i = 0; i < n; i++) {
      String seg = pattern.substring(bounds[2 * i], bounds[2 * i + 1]);
      if (seg.equals("**")) {
        // consecutive "**" mean the same as one; collapse so matching stays linear
        if (kinds.isEmpty() || kinds.get(kinds.size() - 1) != DEEP) {
          add(kinds, literals, parts, DEEP, null, null);
        }
      } else if (seg.contains("**")) {
        throw new IllegalArgumentException(
            "glob segment \"" + seg + "\" uses \"**\" inside a segment; \"**\" must stand alone");
      } else if (seg.equals("*")) {
        add(kinds, literals, parts, ONE, null, null);
      } else if (seg.indexOf('*') >= 0) {
        add(kinds, literals, parts, WILD, null, seg.split("\\*", -1));
      } else {
        add(kinds, literals, parts, LITERAL, seg, null);
      }
    }
    boolean absolute = pattern.charAt(0) == '/';
    boolean endsInSlashStar = pattern.endsWith("/*");
    if (TRAILING_STAR_IS_PREFIX && endsInSlashStar) {
      add(kinds, literals, parts, DEEP, null, null);
    }
    byte[] k = new byte[kinds.size()];
    for (int i = 0; i < k.length; i++) {
      k[i] = kinds.get(i);
    }
    return new Glob(
        pattern, absolute, k, literals.toArray(new String[0]), parts.toArray(new String[0][]));
  }

  private static void add(
      List<Byte> kinds,
      List<String> literals,
      List<String[]> parts,
      byte kind,
      String literal,
      String[] part) {
    kinds.add(kind);
    literals.add(literal);
    parts.add(part);
  }

  /** The pattern as written. */
  public String text() {
    return text;
  }

  /** True when {@code path} is matched by this glob. */
  public boolean matches(StoragePath path) {
    if (path.absolute() != absolute) {
      return false;
    }
    // Greedy wildcard matching over segments with backtracking to the last "**" only: every other
    // token consumes exactly one segment, so earlier "**" never need to be revisited.
    int n = path.size();
    int m = kinds.length;
    int p = 0;
    int s = 0;
    int deepP = -1;
    int deepS = -1;
    while (s < n) {
      if (p < m && kinds[p] == DEEP) {
        deepP = p++;
        deepS = s;
      } else if (p < m && segmentMatches(p, path, s)) {
        p++;
        s++;
      } else if (deepP >= 0) {
        p = deepP + 1;
        s = ++deepS;
      } else {
        return false;
      }
    }
    while (p < m && kinds[p] == DEEP) {
      p++;
    }
    return p == m;
  }

  /**
   * True when every path {@code narrower} matches is provably matched by this glob too (the storage
   * part of the attenuation order, WIRE.md §2.11). The proof compares tokens: a {@code **} here
   * absorbs any of the other's segments, {@code *} covers any one segment, a literal only itself,
   * an in-segment wildcard a literal it matches or a wildcard with the same or a longer prefix and
   * suffix. Anything it cannot prove (e.g. a {@code **} there against a segment token here) is not
   * covered: the answer is sound, never generous.
   */
  public boolean covers(Glob narrower) {
    if (narrower.absolute != absolute) {
      return false;
    }
    byte[] c = narrower.kinds;
    int n = c.length;
    int m = kinds.length;
    // at[i][j]: narrower's tokens from i are covered by this glob's tokens from j
    boolean[][] at = new boolean[n + 1][m + 1];
    at[n][m] = true;
    for (int j = m - 1; j >= 0; j--) {
      at[n][j] = kinds[j] == DEEP && at[n][j + 1];
    }
    for (int i = n - 1; i >= 0; i--) {
      at[i][m] = false;
      for (int j = m - 1; j >= 0; j--) {
        if (kinds[j] == DEEP) {
          // "**" here matches nothing more, or absorbs the segments of narrower's token i
          at[i][j] = at[i][j + 1] || at[i + 1][j];
        } else if (c[i] == DEEP) {
          at[i][j] = false; // any number of segments against exactly one: not provable
        } else {
          at[i][j] = segmentCovers(j, narrower, i) && at[i + 1][j + 1];
        }
      }
    }
    return at[0][0];
  }

  /**
   * Every segment token {@code i} of {@code o} matches is matched by this glob's token {@code j}.
   */
  private boolean segmentCovers(int j, Glob o, int i) {
    byte other = o.kinds[i];
    switch (kinds[j]) {
      case ONE:
        return true; // segments are never empty
      case LITERAL:
        return other == LITERAL && literals[j].equals(o.literals[i]);
      case WILD:
        if (other == LITERAL) {
          String lit = o.literals[i];
          return wildMatches(parts[j], lit, 0, lit.length());
        }
        if (other != WILD) {
          return false;
        }
        String[] mine = parts[j];
        String[] theirs = o.parts[i];
        if (java.util.Arrays.equals(mine, theirs)) {
          return true;
        }
        // "p*s" covers any wildcard segment that starts with p and ends with s at its ends
        return mine.length == 2
            && theirs[0].startsWith(mine[0])
            && theirs[theirs.length - 1].endsWith(mine[1]);
      default:
        return false;
    }
  }

  /** Convenience: normalizes {@code path} and matches; a refused path never matches. */
  public boolean matches(String path) {
    try {
      return matches(StoragePath.parse(path));
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private boolean segmentMatches(int p, StoragePath path, int s) {
    String t = path.text();
    int start = path.start(s);
    int end = path.end(s);
    switch (kinds[p]) {
      case ONE:
        return true;
      case LITERAL:
        {
          String lit = literals[p];
          return lit.length() == end - start && t.regionMatches(start, lit, 0, lit.length());
        }
      case WILD:
        return wildMatches(parts[p], t, start, end);
      default:
        return false;
    }
  }

  /** {@code parts} is the segment split on '*': first part is a prefix, last a suffix. */
  private static boolean wildMatches(String[] parts, String t, int start, int end) {
    String first = parts[0];
    String last = parts[parts.length - 1];
    if (end - start < first.length() + last.length()) {
      return false;
    }
    if (!t.startsWith(first, start)
        || !t.regionMatches(end - last.length(), last, 0, last.length())) {
      return false;
    }
    int pos = start + first.length();
    int limit = end - last.length();
    for (int i = 1; i < parts.length - 1; i++) {
      String mid = parts[i];
      int at = indexWithin(t, mid, pos, limit);
      if (at < 0) {
        return false;
      }
      pos = at + mid.length();
    }
    return true;
  }

  private static int indexWithin(String t, String needle, int from, int limit) {
    for (int i = from; i + needle.length() <= limit; i++) {
      if (t.regionMatches(i, needle, 0, needle.length())) {
        return i;
      }
    }
    return -1;
  }

  @Override
  public int compareTo(Glob o) {
    return text.compareTo(o.text);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Glob g && g.text.equals(text);
  }

  @Override
  public int hashCode() {
    return text.hashCode();
  }

  @Override
  public String toString() {
    return text;
  }
}
