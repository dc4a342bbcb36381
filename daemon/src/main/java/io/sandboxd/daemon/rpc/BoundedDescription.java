package io.sandboxd.daemon.rpc;

/**
 * Cuts a status description so that it fits in a client's trailers: an echoed piece of input (any
 * run of characters without a space) keeps its first {@link #MAX_TOKEN} characters and says how
 * long it was, and the whole description stays under {@link #MAX_ENCODED} bytes as gRPC
 * percent-encodes it (standard clients refuse trailers over 8 KiB and report INTERNAL instead).
 */
final class BoundedDescription {
  /** The longest piece of a description kept whole. */
  static final int MAX_TOKEN = 200;

  /** The most bytes a description takes as the grpc-message trailer. */
  static final int MAX_ENCODED = 2048;

  private BoundedDescription() {}

  /**
   * {@code text} with each over-long piece cut, then cut as a whole to fit {@link #MAX_ENCODED}.
   */
  static String of(String text) {
    if (text == null) {
      return null;
    }
    StringBuilder out = new StringBuilder(Math.min(text.length(), 4 * MAX_TOKEN));
    int i = 0;
    while (i < text.length()) {
      int end = i;
      while (end < text.length() && !Character.isWhitespace(text.charAt(end))) {
        end++;
      }
      appendCut(out, text, i, end);
      if (end < text.length()) {
        out.append(text.charAt(end));
        end++;
      }
      i = end;
      if (out.length() > MAX_ENCODED) {
        break;
      }
    }
    return fit(out.toString(), text.length());
  }

  private static void appendCut(StringBuilder out, String text, int from, int to) {
    int n = to - from;
    if (n <= MAX_TOKEN) {
      out.append(text, from, to);
      return;
    }
    int cut = from + MAX_TOKEN;
    // Never split a surrogate pair: half a character is not valid UTF-8 on the wire.
    if (Character.isHighSurrogate(text.charAt(cut - 1))) {
      cut--;
    }
    out.append(text, from, cut).append("... (").append(n).append(" characters)");
  }

  /** The longest prefix of {@code s} whose encoded form fits, saying how long the original was. */
  private static String fit(String s, int originalLength) {
    if (encodedLength(s, s.length()) <= MAX_ENCODED) {
      return s;
    }
    String tail = "... (description of " + originalLength + " characters cut)";
    int budget = MAX_ENCODED - tail.length();
    int used = 0;
    int end = 0;
    while (end < s.length()) {
      int cp = s.codePointAt(end);
      int cost = cost(cp);
      if (used + cost > budget) {
        break;
      }
      used += cost;
      end += Character.charCount(cp);
    }
    return s.substring(0, end) + tail;
  }

  /** Bytes of {@code s[0, end)} once percent-encoded as gRPC does for grpc-message. */
  static int encodedLength(String s, int end) {
    int n = 0;
    for (int i = 0; i < end; ) {
      int cp = s.codePointAt(i);
      n += cost(cp);
      i += Character.charCount(cp);
    }
    return n;
  }

  private static int cost(int cp) {
    if (cp >= 0x20 && cp < 0x7f && cp != '%') {
      return 1;
    }
    int utf8 = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    return 3 * utf8;
  }
}
