package io.sandboxd.enforcer;

/**
 * The one normalization of a network host shared by endpoints and origins: lowercase DNS names,
 * IPv4 without leading zeros, IPv6 in brackets in RFC 5952 form.
 */
final class HostName {
  private HostName() {}

  /** Normalizes a host; {@code bracketed} IPv6 includes its brackets. */
  static String normalize(String host) {
    if (host.isEmpty()) {
      throw new IllegalArgumentException("empty host");
    }
    if (host.charAt(0) == '[') {
      if (host.charAt(host.length() - 1) != ']') {
        throw new IllegalArgumentException("unterminated IPv6 literal \"" + host + "\"");
      }
      return "[" + Ipv6.canonical(host.substring(1, host.length() - 1)) + "]";
    }
    if (host.indexOf(':') >= 0) {
      throw new IllegalArgumentException("IPv6 host \"" + host + "\" must be in brackets");
    }
    if (host.length() > 253) {
      throw new IllegalArgumentException("host longer than 253 characters");
    }
    // one pass: validate labels and lowercase only if needed (this runs on every egress query)
    char[] lower = null;
    boolean numeric = true;
    int labelStart = 0;
    for (int i = 0; i <= host.length(); i++) {
      char c = i < host.length() ? host.charAt(i) : '.';
      if (c == '.') {
        int len = i - labelStart;
        if (len == 0 || len > 63) {
          throw new IllegalArgumentException(
              "host \"" + host + "\" has an empty or overlong label");
        }
        if (host.charAt(labelStart) == '-' || host.charAt(i - 1) == '-') {
          throw new IllegalArgumentException(
              "host label \"" + host.substring(labelStart, i) + "\" starts or ends with '-'");
        }
        labelStart = i + 1;
        continue;
      }
      if (c >= 'A' && c <= 'Z') {
        if (lower == null) {
          lower = host.toCharArray();
        }
        lower[i] = (char) (c + ('a' - 'A'));
        numeric = false;
      } else if ((c >= 'a' && c <= 'z') || c == '-' || c == '_') {
        numeric = false;
      } else if (c < '0' || c > '9') {
        throw new IllegalArgumentException(
            "host \"" + host + "\" contains '" + c + "' (use the ASCII/punycode form)");
      }
    }
    if (numeric) {
      checkIpv4(host, host.split("\\.", -1));
    }
    return lower == null ? host : new String(lower);
  }

  private static void checkIpv4(String host, String[] labels) {
    if (labels.length != 4) {
      throw new IllegalArgumentException("numeric host \"" + host + "\" is not a dotted IPv4");
    }
    for (String label : labels) {
      if (label.length() > 3
          || (label.length() > 1 && label.charAt(0) == '0')
          || Integer.parseInt(label) > 255) {
        throw new IllegalArgumentException(
            "IPv4 \"" + host + "\" has an octet out of range or with a leading zero");
      }
    }
  }

  /** Parses a decimal port 1..65535; leading zeros are dropped. */
  static int port(String text) {
    if (text.isEmpty() || text.length() > 10) {
      throw new IllegalArgumentException("port \"" + text + "\" is not a decimal in 1..65535");
    }
    long v = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < '0' || c > '9') {
        throw new IllegalArgumentException("port \"" + text + "\" is not a decimal in 1..65535");
      }
      v = v * 10 + (c - '0');
    }
    if (v < 1 || v > 65535) {
      throw new IllegalArgumentException("port " + v + " is outside 1..65535");
    }
    return (int) v;
  }

  /** RFC 5952 text form of an IPv6 address. */
  static final class Ipv6 {
    private Ipv6() {}

    static String canonical(String text) {
      if (text.indexOf('%') >= 0) {
        throw new IllegalArgumentException("IPv6 zone identifiers are not allowed");
      }
      int[] groups = parse(text);
      int bestStart = -1;
      int bestLen = 1; // RFC 5952 §4.2.2: a single zero group is not compressed
      for (int i = 0; i < 8; ) {
        if (groups[i] == 0) {
          int j = i;
          while (j < 8 && groups[j] == 0) {
            j++;
          }
          if (j - i > bestLen) {
            bestStart = i;
            bestLen = j - i;
          }
          i = j;
        } else {
          i++;
        }
      }
      StringBuilder sb = new StringBuilder(39);
      for (int i = 0; i < 8; i++) {
        if (i == bestStart) {
          sb.append("::");
          i += bestLen - 1;
          continue;
        }
        if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') {
          sb.append(':');
        }
        sb.append(Integer.toHexString(groups[i]));
      }
      return sb.toString();
    }

    private static int[] parse(String text) {
      String bad = "malformed IPv6 address \"" + text + "\"";
      int dc = text.indexOf("::");
      if (dc >= 0 && text.indexOf("::", dc + 1) >= 0) {
        throw new IllegalArgumentException(bad);
      }
      String head = dc >= 0 ? text.substring(0, dc) : text;
      String tail = dc >= 0 ? text.substring(dc + 2) : "";
      int[] h = groups(head, bad, dc < 0);
      int[] t = groups(tail, bad, true);
      int total = h.length + t.length;
      if ((dc < 0 && total != 8) || (dc >= 0 && total > 7)) {
        throw new IllegalArgumentException(bad);
      }
      int[] out = new int[8];
      System.arraycopy(h, 0, out, 0, h.length);
      System.arraycopy(t, 0, out, 8 - t.length, t.length);
      return out;
    }

    private static int[] groups(String part, String bad, boolean mayEndInIpv4) {
      if (part.isEmpty()) {
        return new int[0];
      }
      String[] pieces = part.split(":", -1);
      int n = pieces.length;
      boolean v4 = mayEndInIpv4 && pieces[n - 1].indexOf('.') >= 0;
      int[] out = new int[v4 ? n + 1 : n];
      for (int i = 0; i < n; i++) {
        String p = pieces[i];
        if (v4 && i == n - 1) {
          String[] oct = p.split("\\.", -1);
          checkIpv4(p, oct);
          out[i] = (Integer.parseInt(oct[0]) << 8) | Integer.parseInt(oct[1]);
          out[i + 1] = (Integer.parseInt(oct[2]) << 8) | Integer.parseInt(oct[3]);
          break;
        }
        if (p.isEmpty() || p.length() > 4) {
          throw new IllegalArgumentException(bad);
        }
        int v = 0;
        for (int k = 0; k < p.length(); k++) {
          int d = Character.digit(p.charAt(k), 16);
          if (d < 0) {
            throw new IllegalArgumentException(bad);
          }
          v = v * 16 + d;
        }
        out[i] = v;
      }
      return out;
    }
  }
}
