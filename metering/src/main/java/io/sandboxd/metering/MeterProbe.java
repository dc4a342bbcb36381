package io.sandboxd.metering;

import java.util.Objects;

/**
 * What discovery found for one source: used, unavailable (with the reason) or not tried.
 *
 * @param source "rapl", "rapl-msr", "nvml" or "estimator"
 */
public record MeterProbe(String source, Status status, String detail) {
  /** The outcome of probing one source. */
  public enum Status {
    Found,
    Unavailable,
    Skipped
  }

  public MeterProbe {
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(status, "status");
    Objects.requireNonNull(detail, "detail");
  }
}
