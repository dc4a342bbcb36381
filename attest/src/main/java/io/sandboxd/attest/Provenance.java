package io.sandboxd.attest;

/** How an energy figure was obtained, ordered from best to worst (WIRE.md §2.3). */
public enum Provenance {
  HwShunt,
  ModelBased,
  Estimator;

  /** The jouleclaw rule: a sum is only as good as its worst part. */
  public Provenance worst(Provenance other) {
    return compareTo(other) >= 0 ? this : other;
  }

  /** The worse of two provenances. */
  public static Provenance worst(Provenance a, Provenance b) {
    return a.worst(b);
  }

  public static Provenance parse(String s, String path) {
    return JsonReader.constant(Provenance.class, s, path, "provenance");
  }
}
