package io.sandboxd.enforcer;

import java.util.Locale;

/**
 * One place the node's operator lets a secret go: {@code http(s)://host[:port][/path-prefix]}. A
 * request matches when its scheme and endpoint are equal and its path lies under the prefix, whole
 * segments only ({@code /v1} covers {@code /v1} and {@code /v1/x}, never {@code /v1x}).
 */
public record SecretTarget(String scheme, Endpoint endpoint, String pathPrefix) {

  /** Parses and normalizes; throws {@link IllegalArgumentException} saying why it is malformed. */
  public static SecretTarget parse(String text) {
    Origin origin = Origin.ofUrl(text);
    String scheme = origin.scheme();
    if (!scheme.equals("http") && !scheme.equals("https")) {
      throw new IllegalArgumentException("\"" + text + "\": the scheme must be http or https");
    }
    String rest = text.substring(text.indexOf("://") + 3);
    int slash = rest.indexOf('/');
    if (rest.indexOf('?') >= 0 || rest.indexOf('#') >= 0) {
      throw new IllegalArgumentException("\"" + text + "\": no query or fragment, only a path");
    }
    String path = slash < 0 ? "/" : rest.substring(slash);
    if (!plainPath(path)) {
      throw new IllegalArgumentException(
          "\"" + text + "\": the path must have no '.', '..' or empty segments and no %-escapes");
    }
    int port = origin.port() != 0 ? origin.port() : scheme.equals("https") ? 443 : 80;
    return new SecretTarget(scheme, new Endpoint(origin.host(), port), path);
  }

  /**
   * Whether a request to {@code scheme://endpoint} with the raw path {@code rawPath} may carry the
   * secret. A path the far end could resolve elsewhere (dot segments, %-escapes, backslashes) never
   * matches.
   */
  public boolean admits(String requestScheme, Endpoint requestEndpoint, String rawPath) {
    String path = rawPath == null || rawPath.isEmpty() ? "/" : rawPath;
    if (!scheme.equals(requestScheme.toLowerCase(Locale.ROOT))
        || !endpoint.equals(requestEndpoint)
        || !plainPath(path)) {
      return false;
    }
    if (pathPrefix.endsWith("/")) {
      return path.startsWith(pathPrefix);
    }
    return path.equals(pathPrefix) || path.startsWith(pathPrefix + "/");
  }

  /** An absolute path of non-empty, non-dot segments with no escapes (a trailing '/' is fine). */
  private static boolean plainPath(String path) {
    if (!path.startsWith("/") || path.indexOf('%') >= 0 || path.indexOf('\\') >= 0) {
      return false;
    }
    String[] segments = path.substring(1).split("/", -1);
    for (int i = 0; i < segments.length; i++) {
      String s = segments[i];
      boolean last = i == segments.length - 1;
      if (s.equals(".") || s.equals("..") || (s.isEmpty() && !last)) {
        return false;
      }
      for (int j = 0; j < s.length(); j++) {
        if (s.charAt(j) < 0x21 || s.charAt(j) > 0x7e) {
          return false;
        }
      }
    }
    return true;
  }

  @Override
  public String toString() {
    return scheme + "://" + endpoint + pathPrefix;
  }
}
