package io.sandboxd.metering;

import io.sandboxd.attest.DeviceClass;
import java.util.EnumMap;
import java.util.Map;

/**
 * A per-class power model in integer mW. For {@code Cpu} the figure is the draw of one busy CPU, so
 * the estimate is mW × busy CPU time; for any other class it is the draw of one device while a unit
 * holds it, so the estimate is mW × holding time.
 */
public record EstimatorModel(Map<DeviceClass, Long> milliwatts) {
  /** 10 W per busy CPU: in the range of a server core under load (200 W / 20-32 cores). */
  public static final long DEFAULT_CPU_MILLIWATTS = 10_000;

  public EstimatorModel {
    milliwatts = Map.copyOf(milliwatts);
    milliwatts.forEach(
        (c, mw) -> {
          if (mw == null || mw < 0) {
            throw new IllegalArgumentException(
                "estimator power for " + c + " must be >= 0 mW: " + mw);
          }
        });
  }

  /** The default model: Cpu only. */
  public static EstimatorModel cpuOnly() {
    Map<DeviceClass, Long> m = new EnumMap<>(DeviceClass.class);
    m.put(DeviceClass.Cpu, DEFAULT_CPU_MILLIWATTS);
    return new EstimatorModel(m);
  }
}
