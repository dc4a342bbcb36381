package io.sandboxd.metering;

import java.util.List;

/**
 * A source of cumulative energy counters. Each sample returns, per domain, the energy since the
 * meter was opened in µJ, with wraps already unfolded; so a meter must be sampled at least once per
 * wrap period, which {@link Attribution} does.
 */
public sealed interface Meter extends AutoCloseable permits CounterMeter {

  /** Short source name as written into receipts: "rapl", "rapl-msr", "nvml" or "estimator". */
  String source();

  /** The counters this meter exposes, fixed when it is opened. */
  List<MeterDomain> domains();

  /** Reads every domain once. */
  MeterSample sample() throws MeterException;

  @Override
  void close();
}
