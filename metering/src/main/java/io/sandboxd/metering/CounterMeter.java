package io.sandboxd.metering;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * What every meter shares: a source name, one counter per domain (in domain order) and the clock
 * samples are stamped with. A sample reads the clock once and then each counter at that time.
 *
 * @param <C> the meter's per-domain counter state
 */
abstract sealed class CounterMeter<C> implements Meter
    permits RaplPowercapMeter, RaplMsrMeter, NvmlMeter, Estimator {
  private final String source;
  private final List<C> counters;
  private final List<MeterDomain> domains;
  private final LongSupplier clock;

  CounterMeter(
      String source, List<C> counters, Function<C, MeterDomain> domainOf, LongSupplier clock) {
    this.source = source;
    this.counters = List.copyOf(counters);
    this.domains = this.counters.stream().map(domainOf).toList();
    this.clock = clock;
  }

  @Override
  public final String source() {
    return source;
  }

  @Override
  public final List<MeterDomain> domains() {
    return domains;
  }

  final List<C> counters() {
    return counters;
  }

  @Override
  public final synchronized MeterSample sample() throws MeterException {
    long at = clock.getAsLong();
    beginSample();
    List<DomainCount> counts = new ArrayList<>(counters.size());
    for (C c : counters) {
      counts.add(read(c, at));
    }
    return new MeterSample(at, counts);
  }

  /**
   * Runs before the counters of a sample are read: to refuse a closed meter or read shared state.
   */
  void beginSample() throws MeterException {}

  /** Reads {@code counter} for the sample at {@code atNs}, updating its unfolded total. */
  abstract DomainCount read(C counter, long atNs) throws MeterException;
}
