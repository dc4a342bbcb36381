package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** Glob matching against a slow reference reading of WIRE.md §3.1 (reading B), and path rules. */
class GlobPropertiesTest {

  @Provide
  Arbitrary<List<String>> pathSegments() {
    return Arbitraries.of("a", "b", "ab", "x.txt", "cfg", "data").list().ofMinSize(1).ofMaxSize(6);
  }

  @Provide
  Arbitrary<List<String>> patternSegments() {
    return Arbitraries.of("a", "b", "*", "**", "a*", "*b", "*.txt", "x.txt", "a*b", "data")
        .list()
        .ofMinSize(1)
        .ofMaxSize(5);
  }

  @Property(tries = 3000)
  void matchesTheReferenceReading(
      @ForAll("patternSegments") List<String> pattern,
      @ForAll("pathSegments") List<String> path,
      @ForAll boolean patternAbsolute,
      @ForAll boolean pathAbsolute) {
    String p = (patternAbsolute ? "/" : "") + String.join("/", pattern);
    String s = (pathAbsolute ? "/" : "") + String.join("/", path);
    boolean expected = patternAbsolute == pathAbsolute && reference(p, pattern, path);
    assertEquals(expected, Glob.parse(p).matches(StoragePath.parse(s)), p + " vs " + s);
  }

  /** Literal recursive reading: "**" = zero or more segments, a trailing "/*" = "/*" + "/**". */
  private static boolean reference(String text, List<String> pattern, List<String> path) {
    List<String> p = new ArrayList<>(pattern);
    if (text.endsWith("/*")) {
      p.add("**");
    }
    return match(p, 0, path, 0);
  }

  private static boolean match(List<String> p, int i, List<String> s, int j) {
    if (i == p.size()) {
      return j == s.size();
    }
    if (p.get(i).equals("**")) {
      for (int k = j; k <= s.size(); k++) {
        if (match(p, i + 1, s, k)) {
          return true;
        }
      }
      return false;
    }
    if (j == s.size()) {
      return false;
    }
    String regex =
        String.join(
            "[^/]*", List.of(p.get(i).split("\\*", -1)).stream().map(Pattern::quote).toList());
    return s.get(j).matches(regex) && match(p, i + 1, s, j + 1);
  }

  @Property
  void doubleStarAloneMatchesEveryRelativePath(@ForAll("pathSegments") List<String> path) {
    assertTrue(Glob.parse("**").matches(StoragePath.parse(String.join("/", path))));
    assertFalse(Glob.parse("**").matches(StoragePath.parse("/" + String.join("/", path))));
  }

  @Property
  void aLiteralPatternMatchesItself(@ForAll("pathSegments") List<String> path) {
    String s = String.join("/", path);
    assertTrue(Glob.parse(s).matches(StoragePath.parse(s)));
  }

  @Property
  void trailingSlashStarIsAPrefixBelowButNotAt(
      @ForAll("pathSegments") List<String> prefix, @ForAll("pathSegments") List<String> below) {
    String p = String.join("/", prefix);
    Glob g = Glob.parse(p + "/*");
    assertTrue(g.matches(StoragePath.parse(p + "/" + String.join("/", below))));
    assertFalse(g.matches(StoragePath.parse(p)));
  }

  @Property
  void dotSegmentsAndEmptySegmentsAreRefused(
      @ForAll("pathSegments") List<String> path,
      @ForAll("badSegment") String bad,
      @ForAll int where) {
    List<String> segs = new ArrayList<>(path);
    int at = Math.floorMod(where, segs.size() + 1);
    // an empty first segment would be a leading "/", which is legal: put it at the end instead
    segs.add(bad.isEmpty() && at == 0 ? segs.size() : at, bad);
    String s = String.join("/", segs);
    assertThrows(IllegalArgumentException.class, () -> StoragePath.parse(s));
    assertThrows(IllegalArgumentException.class, () -> Glob.parse(s));
    assertTrue(
        new Enforcer(
                    Grants.parse(
                        "{\"storage\":{\"read\":[\"**\"]}}"
                            .getBytes(java.nio.charset.StandardCharsets.UTF_8)))
                .mayPath(PathMode.READ, s)
            instanceof Decision.Denied);
  }

  @Provide
  Arbitrary<String> badSegment() {
    return Arbitraries.of(".", "..", "", "a\0b");
  }

  @Property
  void normalizationKeepsTheTextAndSegments(@ForAll("pathSegments") List<String> path) {
    String s = String.join("/", path);
    StoragePath p = StoragePath.parse(s);
    assertEquals(s, p.text());
    assertEquals(path, p.segments());
  }
}
