package io.sandboxd.executor;

import java.io.ByteArrayOutputStream;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.BitSet;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Cuts node secrets out of what an endpoint sent back, before the guest, the log or the journal
 * sees it: the secret's bytes and the encodings an echo would carry them in (the injected header
 * value, base64 at every alignment, percent and JSON escapes, hex, a Basic credential's decoded
 * form). Matching ignores ASCII case; each match becomes {@link #MARK}.
 */
final class Redaction {
  static final byte[] MARK = "[redacted]".getBytes(StandardCharsets.US_ASCII);

  /** Derived forms shorter than this are not matched: they would cut unrelated bytes. */
  private static final int MIN_DERIVED = 8;

  private final List<byte[]> needles;

  private Redaction(List<byte[]> needles) {
    this.needles = needles;
  }

  static Redaction none() {
    return new Redaction(List.of());
  }

  /** Redacts each secret in {@code secrets} and every exact value in {@code injected}. */
  static Redaction of(Collection<String> secrets, Collection<String> injected) {
    Set<String> forms = new LinkedHashSet<>();
    for (String s : secrets) {
      if (!s.isEmpty()) {
        forms.add(s);
        derived(s, forms);
      }
    }
    for (String v : injected) {
      if (!v.isEmpty()) {
        forms.add(v);
      }
    }
    List<byte[]> out = new ArrayList<>();
    for (String f : forms) {
      byte[] b = f.getBytes(StandardCharsets.UTF_8);
      for (int i = 0; i < b.length; i++) {
        b[i] = lower(b[i]);
      }
      out.add(b);
    }
    return new Redaction(List.copyOf(out));
  }

  boolean isEmpty() {
    return needles.isEmpty();
  }

  private static void derived(String s, Set<String> forms) {
    byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
    List<String> d = new ArrayList<>();
    d.add(new String(utf8, StandardCharsets.ISO_8859_1)); // header bytes read as Latin-1
    d.add(URLEncoder.encode(s, StandardCharsets.UTF_8));
    d.add(URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20"));
    d.add(jsonEscaped(s, false));
    d.add(jsonEscaped(s, true));
    d.add(io.sandboxd.attest.Hex.encode(utf8));
    for (int k = 0; k < 3; k++) {
      d.add(base64Core(utf8, k, Base64.getEncoder()));
      d.add(base64Core(utf8, k, Base64.getUrlEncoder()));
    }
    // A Basic credential is base64 of user:password; an echo may decode it.
    try {
      byte[] decoded = Base64.getDecoder().decode(s);
      String plain = new String(decoded, StandardCharsets.UTF_8);
      if (SandboxImports.utf8(decoded) != null && plain.chars().allMatch(c -> c >= 0x20)) {
        d.add(plain);
        int colon = plain.indexOf(':');
        if (colon >= 0) {
          d.add(plain.substring(colon + 1));
        }
      }
    } catch (IllegalArgumentException notBase64) {
      // not a Basic credential
    }
    for (String f : d) {
      if (f.length() >= MIN_DERIVED) {
        forms.add(f);
      }
    }
  }

  /**
   * The base64 characters that depend only on {@code data} when it starts at byte offset {@code k}
   * (mod 3) of a longer encoded stream: what any base64 of a text holding the secret contains.
   */
  private static String base64Core(byte[] data, int k, Base64.Encoder enc) {
    byte[] padded = new byte[k + data.length];
    System.arraycopy(data, 0, padded, k, data.length);
    String all = enc.encodeToString(padded);
    int from = (8 * k + 5) / 6;
    int to = 8 * (k + data.length) / 6;
    return to > from ? all.substring(from, to) : "";
  }

  private static String jsonEscaped(String s, boolean asciiOnly) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c == '/' && asciiOnly) {
        b.append("\\/");
      } else if (c < 0x20 || (asciiOnly && c > 0x7e)) {
        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  /** {@code in} with every match replaced by {@link #MARK}. */
  byte[] apply(byte[] in) {
    if (needles.isEmpty() || in.length == 0) {
      return in;
    }
    byte[] out = in;
    // A replacement cannot create a new match unless a secret contains the mark; a few passes
    // settle that case, and if they do not the whole value is withheld.
    for (int pass = 0; pass < 3; pass++) {
      BitSet cut = matches(out);
      if (cut.isEmpty()) {
        return out;
      }
      out = replace(out, cut);
    }
    return matches(out).isEmpty() ? out : MARK.clone();
  }

  String apply(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    byte[] r = apply(b);
    return r == b ? s : new String(r, StandardCharsets.UTF_8);
  }

  /** Whether any secret form occurs in {@code in}. */
  boolean leaks(byte[] in) {
    return !needles.isEmpty() && !matches(in).isEmpty();
  }

  private BitSet matches(byte[] hay) {
    BitSet cut = new BitSet();
    for (byte[] n : needles) {
      mark(hay, n, cut);
    }
    return cut;
  }

  private static byte[] replace(byte[] in, BitSet cut) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(in.length);
    int i = 0;
    while (i < in.length) {
      int start = cut.nextSetBit(i);
      if (start < 0) {
        out.write(in, i, in.length - i);
        break;
      }
      out.write(in, i, start - i);
      out.write(MARK, 0, MARK.length);
      int end = cut.nextClearBit(start);
      i = Math.min(end, in.length);
    }
    return out.toByteArray();
  }

  private static byte lower(byte b) {
    return b >= 'A' && b <= 'Z' ? (byte) (b + ('a' - 'A')) : b;
  }

  /** Knuth-Morris-Pratt over ASCII-lowercased bytes: linear whatever the input. */
  private static void mark(byte[] hay, byte[] needle, BitSet cut) {
    int m = needle.length;
    if (m == 0 || hay.length < m) {
      return;
    }
    int[] fail = new int[m];
    for (int i = 1, k = 0; i < m; i++) {
      while (k > 0 && needle[i] != needle[k]) {
        k = fail[k - 1];
      }
      if (needle[i] == needle[k]) {
        k++;
      }
      fail[i] = k;
    }
    for (int i = 0, k = 0; i < hay.length; i++) {
      byte c = lower(hay[i]);
      while (k > 0 && c != needle[k]) {
        k = fail[k - 1];
      }
      if (c == needle[k]) {
        k++;
      }
      if (k == m) {
        cut.set(i - m + 1, i + 1);
        k = fail[k - 1];
      }
    }
  }
}
