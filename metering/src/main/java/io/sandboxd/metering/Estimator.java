package io.sandboxd.metering;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * An estimate, not a measurement: one counter per modelled class growing at the model's power, over
 * the node's busy CPU time for {@code Cpu} and over wall time for other classes. Always labelled
 * {@code Estimator}; used only for classes nothing on the node can measure.
 */
public final class Estimator extends CounterMeter<Estimator.Counter> {
  static final String SOURCE = "estimator";

  /** /proc/stat counts in 10 ms ticks. */
  static final long MIN_WINDOW_NS = 10_000_000L;

  private final NodeCpuTime node;
  private final boolean needsBusy;

  /** The node's busy CPU ns at the sample being taken (read once per sample, when needed). */
  private long busy;

  /**
   * @param classes the classes to estimate (each must be in the model)
   */
  public Estimator(
      EstimatorModel model, Set<DeviceClass> classes, NodeCpuTime node, LongSupplier clock)
      throws MeterUnavailableException {
    super(SOURCE, counters(model, classes, node, clock), k -> k.domain, clock);
    this.node = node;
    this.needsBusy = classes.contains(DeviceClass.Cpu);
  }

  private static List<Counter> counters(
      EstimatorModel model, Set<DeviceClass> classes, NodeCpuTime node, LongSupplier clock)
      throws MeterUnavailableException {
    List<Counter> list = new ArrayList<>();
    long busy = classes.contains(DeviceClass.Cpu) ? readBusy(node) : 0;
    long now = clock.getAsLong();
    for (DeviceClass c : DeviceClass.values()) {
      if (!classes.contains(c)) {
        continue;
      }
      Long mw = model.milliwatts().get(c);
      if (mw == null) {
        throw new IllegalArgumentException("the estimator model has no power for " + c);
      }
      MeterDomain domain =
          new MeterDomain(
              "estimate:" + c.name(),
              c,
              DomainRole.Estimate,
              Provenance.Estimator,
              1,
              MIN_WINDOW_NS,
              SOURCE);
      list.add(new Counter(domain, mw, c == DeviceClass.Cpu ? busy : now));
    }
    return list;
  }

  private static long readBusy(NodeCpuTime node) throws MeterUnavailableException {
    try {
      return node.busyNs();
    } catch (IOException e) {
      throw new MeterUnavailableException(
          "estimator cannot read node CPU time: " + e.getMessage(), e);
    }
  }

  @Override
  void beginSample() throws MeterException {
    if (needsBusy) {
      try {
        busy = node.busyNs();
      } catch (IOException e) {
        throw new MeterException("estimator cannot read node CPU time: " + e.getMessage(), e);
      }
    }
  }

  @Override
  DomainCount read(Counter k, long now) {
    long base = k.domain.energyClass() == DeviceClass.Cpu ? busy : now;
    // a clock or counter that steps back adds nothing rather than going negative
    k.integral.add(k.milliwatts, Math.max(0, base - k.previous));
    k.previous = Math.max(k.previous, base);
    return new DomainCount(k.integral.totalUj(), false);
  }

  @Override
  public void close() {
    // nothing held
  }

  /** One modelled class's running integral. */
  static final class Counter {
    final MeterDomain domain;
    final long milliwatts;
    final PowerIntegral integral = new PowerIntegral(PowerIntegral.MILLIWATT_NANOS_PER_UJ);
    long previous;

    Counter(MeterDomain domain, long milliwatts, long first) {
      this.domain = domain;
      this.milliwatts = milliwatts;
      this.previous = first;
    }
  }
}
