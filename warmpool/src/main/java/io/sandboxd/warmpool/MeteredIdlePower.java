package io.sandboxd.warmpool;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import io.sandboxd.metering.Attribution;
import io.sandboxd.metering.DiscoveredMeters;
import io.sandboxd.metering.Estimator;
import java.util.function.LongSupplier;

/**
 * The node's idle draw from its CPU meter: the lowest average power over the windows of at least
 * {@link #WINDOW_MS} seen so far (µJ per ms is mW), labelled ModelBased because an instance's share
 * of it is an apportionment. Until a first window closes, and on a node without a meter, the
 * estimator's figure, labelled Estimator.
 */
public final class MeteredIdlePower implements IdlePower {
  static final long WINDOW_MS = 1_000;

  private final LongSupplier cumulativeUj;
  private final LongSupplier nowMs;
  private final long estimateMw;
  private long windowStartMs = -1;
  private long windowStartUj;
  private long lowestMw = -1;

  MeteredIdlePower(LongSupplier cumulativeUj, LongSupplier nowMs, long estimateMw) {
    this.cumulativeUj = cumulativeUj;
    this.nowMs = nowMs;
    this.estimateMw = estimateMw;
  }

  /** The measured draw where the node has a real CPU meter, the estimate otherwise. */
  public static IdlePower of(DiscoveredMeters meters, Attribution attribution, long estimateMw) {
    boolean measured =
        meters.meters().stream().anyMatch(m -> !(m instanceof Estimator))
            && meters.canMeter(DeviceClass.Cpu);
    if (!measured) {
      return IdlePower.fixed(estimateMw, Provenance.Estimator);
    }
    return new MeteredIdlePower(
        () -> attribution.cumulativeUj(DeviceClass.Cpu), System::currentTimeMillis, estimateMw);
  }

  @Override
  public synchronized long milliwatts() {
    long now = nowMs.getAsLong();
    if (windowStartMs < 0) {
      windowStartMs = now;
      windowStartUj = cumulativeUj.getAsLong();
    } else if (now - windowStartMs >= WINDOW_MS) {
      long uj = cumulativeUj.getAsLong();
      if (uj >= windowStartUj) {
        long mw = (uj - windowStartUj) / (now - windowStartMs);
        lowestMw = lowestMw < 0 ? mw : Math.min(lowestMw, mw);
      }
      windowStartMs = now;
      windowStartUj = uj;
    }
    return lowestMw < 0 ? estimateMw : lowestMw;
  }

  @Override
  public synchronized Provenance provenance() {
    return lowestMw < 0 ? Provenance.Estimator : Provenance.ModelBased;
  }
}
