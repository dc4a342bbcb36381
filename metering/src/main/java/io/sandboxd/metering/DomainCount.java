package io.sandboxd.metering;

/**
 * A domain's cumulative energy since its meter was opened, in µJ.
 *
 * @param reset true once the underlying counter has been seen to drop (a driver reload), which is
 *     not a wrap: energy between the last sample and the reset is lost, so figures are lower bounds
 */
public record DomainCount(long cumulativeUj, boolean reset) {
  public DomainCount {
    if (cumulativeUj < 0) {
      throw new IllegalArgumentException("cumulativeUj must be >= 0: " + cumulativeUj);
    }
  }
}
