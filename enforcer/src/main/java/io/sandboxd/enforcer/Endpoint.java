package io.sandboxd.enforcer;

/**
 * A normalized network endpoint {@code host:port} (WIRE.md §3.2): lowercase host, decimal port
 * without leading zeros, IPv6 in brackets, port required.
 */
public record Endpoint(String host, int port) implements Comparable<Endpoint> {

  /** Parses and normalizes; throws {@link IllegalArgumentException} saying why it is malformed. */
  public static Endpoint parse(String text) {
    int colon;
    if (!text.isEmpty() && text.charAt(0) == '[') {
      int close = text.indexOf(']');
      if (close < 0) {
        throw new IllegalArgumentException("endpoint \"" + text + "\": unterminated IPv6 literal");
      }
      colon = close + 1;
      if (colon >= text.length() || text.charAt(colon) != ':') {
        throw new IllegalArgumentException("endpoint \"" + text + "\": a port is required");
      }
    } else {
      colon = text.lastIndexOf(':');
      if (colon < 0) {
        throw new IllegalArgumentException("endpoint \"" + text + "\": a port is required");
      }
    }
    try {
      return new Endpoint(
          HostName.normalize(text.substring(0, colon)), HostName.port(text.substring(colon + 1)));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("endpoint \"" + text + "\": " + e.getMessage(), e);
    }
  }

  /** The normalized {@code host:port} spelling. */
  @Override
  public String toString() {
    return host + ":" + port;
  }

  @Override
  public int compareTo(Endpoint o) {
    return toString().compareTo(o.toString());
  }
}
