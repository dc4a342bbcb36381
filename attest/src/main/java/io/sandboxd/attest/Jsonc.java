package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * JSON with comments (JSONC, as devcontainer.json is written) read through the one strict parser: a
 * linear pre-pass blanks comments, trailing commas and a leading byte-order mark with spaces, so
 * every byte keeps its position and the strict parser's errors still name the right byte. The same
 * pass bounds size and nesting, so no input can exhaust the stack or the heap.
 */
public final class Jsonc {
  /** Largest document read (4 MiB): far above any real devcontainer.json. */
  public static final int MAX_BYTES = 4 << 20;

  /** Deepest nesting of objects and arrays. */
  public static final int MAX_DEPTH = 64;

  private Jsonc() {}

  /** Parses {@code bytes} as JSONC: valid UTF-8, no duplicate keys, exactly one value. */
  public static JsonNode parse(byte[] bytes) {
    return CanonicalJson.parse(toJson(bytes));
  }

  /**
   * The strict JSON text of a JSONC document, byte for byte the same length: comments, trailing
   * commas and a leading byte-order mark become spaces (newlines inside comments are kept).
   */
  public static byte[] toJson(byte[] bytes) {
    if (bytes.length > MAX_BYTES) {
      throw new CanonicalJsonException(
          "document is " + bytes.length + " bytes; at most " + MAX_BYTES + " are read");
    }
    CanonicalJson.checkUtf8(bytes);
    byte[] out = bytes.clone();
    int i = 0;
    if (out.length >= 3
        && (out[0] & 0xff) == 0xEF
        && (out[1] & 0xff) == 0xBB
        && (out[2] & 0xff) == 0xBF) {
      out[0] = out[1] = out[2] = ' ';
      i = 3;
    }
    int depth = 0;
    int pendingComma = -1;
    byte prev = 0; // the last significant byte outside strings and comments
    while (i < out.length) {
      byte b = out[i];
      switch (b) {
        case '"' -> {
          i = endOfString(out, i);
          pendingComma = -1;
          prev = '"';
          continue;
        }
        case '/' -> {
          if (i + 1 < out.length && out[i + 1] == '/') {
            while (i < out.length && out[i] != '\n' && out[i] != '\r') {
              out[i++] = ' ';
            }
            continue;
          }
          if (i + 1 < out.length && out[i + 1] == '*') {
            int start = i;
            out[i++] = ' ';
            out[i++] = ' ';
            while (i < out.length && !(out[i] == '*' && i + 1 < out.length && out[i + 1] == '/')) {
              if (out[i] != '\n' && out[i] != '\r') {
                out[i] = ' ';
              }
              i++;
            }
            if (i >= out.length) {
              throw new CanonicalJsonException(
                  "malformed JSONC at byte " + start + ": unterminated /* comment");
            }
            out[i++] = ' ';
            out[i++] = ' ';
            continue;
          }
          pendingComma = -1;
          prev = b;
        }
        case ' ', '\t', '\n', '\r' -> {}
        case ',' -> {
          // A comma after a value may be a trailing one; after '[', '{' or ',' it is an error.
          pendingComma = prev == '[' || prev == '{' || prev == ',' ? -1 : i;
          prev = b;
        }
        case '}', ']' -> {
          if (pendingComma >= 0) {
            out[pendingComma] = ' ';
          }
          pendingComma = -1;
          depth--;
          prev = b;
        }
        case '{', '[' -> {
          if (++depth > MAX_DEPTH) {
            throw new CanonicalJsonException(
                "malformed JSONC at byte " + i + ": nested deeper than " + MAX_DEPTH + " levels");
          }
          pendingComma = -1;
          prev = b;
        }
        default -> {
          pendingComma = -1;
          prev = b;
        }
      }
      i++;
    }
    return out;
  }

  /** The index just past the string starting at {@code open} (or the end of input). */
  private static int endOfString(byte[] s, int open) {
    int i = open + 1;
    while (i < s.length) {
      if (s[i] == '\\') {
        i += 2;
      } else if (s[i] == '"') {
        return i + 1;
      } else {
        i++;
      }
    }
    return s.length; // unterminated: the strict parser names it
  }
}
