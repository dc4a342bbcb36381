package io.sandboxd.metering;

/** How an energy figure was obtained, ordered from most to least trustworthy (WIRE.md §2.3, §4). */
public enum Provenance {
  /** A hardware counter covering exactly what it is attributed to. */
  HwShunt,
  /**
   * A measurement apportioned or integrated through a model (a CPU-time share, a power integral).
   */
  ModelBased,
  /** No measurement at all: a configured power model times time. */
  Estimator;

  /** The less trustworthy of the two: a combined figure is only as honest as its weakest part. */
  public static Provenance worst(Provenance a, Provenance b) {
    return a.compareTo(b) >= 0 ? a : b;
  }
}
