package io.sandboxd.enforcer;

import java.util.Locale;

/**
 * A normalized web origin {@code scheme://host[:port]} (WIRE.md §3.2, Q14): lowercase scheme and
 * host, the default port (80 for http, 443 for https) dropped; {@code port} is 0 when implied.
 */
public record Origin(String scheme, String host, int port) implements Comparable<Origin> {

  /** Parses an origin exactly (no path); throws {@link IllegalArgumentException} if malformed. */
  public static Origin parse(String text) {
    return parse(text, false);
  }

  /** Takes the origin of a navigation target URL, ignoring its path, query and fragment. */
  public static Origin ofUrl(String url) {
    return parse(url, true);
  }

  private static Origin parse(String text, boolean allowPath) {
    int sep = text.indexOf("://");
    if (sep <= 0) {
      throw new IllegalArgumentException("origin \"" + text + "\": expected scheme://host[:port]");
    }
    String scheme = text.substring(0, sep).toLowerCase(Locale.ROOT);
    for (int i = 0; i < scheme.length(); i++) {
      char c = scheme.charAt(i);
      boolean ok =
          (c >= 'a' && c <= 'z') || (i > 0 && ((c >= '0' && c <= '9') || "+-.".indexOf(c) >= 0));
      if (!ok) {
        throw new IllegalArgumentException("origin \"" + text + "\": malformed scheme");
      }
    }
    String rest = text.substring(sep + 3);
    int end = rest.length();
    for (int i = 0; i < rest.length(); i++) {
      char c = rest.charAt(i);
      if (c == '/' || c == '?' || c == '#') {
        end = i;
        break;
      }
    }
    if (end < rest.length() && !allowPath) {
      throw new IllegalArgumentException(
          "origin \"" + text + "\": an origin has no path, query or fragment");
    }
    String authority = rest.substring(0, end);
    if (authority.indexOf('@') >= 0) {
      throw new IllegalArgumentException("origin \"" + text + "\": user info is not allowed");
    }
    String hostPart = authority;
    int port = 0;
    int colon =
        authority.startsWith("[")
            ? authority.indexOf(':', authority.indexOf(']'))
            : authority.lastIndexOf(':');
    try {
      if (colon >= 0) {
        hostPart = authority.substring(0, colon);
        port = HostName.port(authority.substring(colon + 1));
      }
      String host = HostName.normalize(hostPart);
      if (port == defaultPort(scheme)) {
        port = 0;
      }
      return new Origin(scheme, host, port);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("origin \"" + text + "\": " + e.getMessage(), e);
    }
  }

  private static int defaultPort(String scheme) {
    return switch (scheme) {
      case "http", "ws" -> 80;
      case "https", "wss" -> 443;
      default -> -1;
    };
  }

  /** The normalized spelling. */
  @Override
  public String toString() {
    return port == 0 ? scheme + "://" + host : scheme + "://" + host + ":" + port;
  }

  @Override
  public int compareTo(Origin o) {
    return toString().compareTo(o.toString());
  }
}
