package io.sandboxd.metering;

import java.util.List;

/**
 * One reading of every domain of a meter, in the order of {@link Meter#domains()}.
 *
 * @param atNs monotonic time of the reading (the meter's clock, {@code System.nanoTime} by default)
 */
public record MeterSample(long atNs, List<DomainCount> counts) {
  public MeterSample {
    counts = List.copyOf(counts);
  }

  /** The cumulative energy of the domain at {@code index} of {@link Meter#domains()}, in µJ. */
  public long cumulativeUj(int index) {
    return counts.get(index).cumulativeUj();
  }
}
