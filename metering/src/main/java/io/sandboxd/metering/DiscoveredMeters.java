package io.sandboxd.metering;

import io.sandboxd.attest.DeviceClass;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The meters discovery opened, what it found for every source, and what follows from them: which
 * classes this node can meter (so admission can refuse the rest, grant rule 2).
 */
public final class DiscoveredMeters implements AutoCloseable {
  private final List<Meter> meters;
  private final List<MeterProbe> probes;
  private final NodeCpuTime nodeCpuTime;

  public DiscoveredMeters(List<Meter> meters, List<MeterProbe> probes, NodeCpuTime nodeCpuTime) {
    this.meters = List.copyOf(meters);
    this.probes = List.copyOf(probes);
    this.nodeCpuTime = nodeCpuTime;
  }

  public List<Meter> meters() {
    return meters;
  }

  public List<MeterProbe> probes() {
    return probes;
  }

  public NodeCpuTime nodeCpuTime() {
    return nodeCpuTime;
  }

  /** Classes with at least one additive counter: only these may appear in a grant's devices. */
  public Set<DeviceClass> meterableClasses() {
    Set<DeviceClass> classes = EnumSet.noneOf(DeviceClass.class);
    for (Meter m : meters) {
      for (MeterDomain d : m.domains()) {
        if (d.role().additive()) {
          classes.add(d.energyClass());
        }
      }
    }
    return Collections.unmodifiableSet(classes);
  }

  /** Whether a grant naming {@code energyClass} can be honoured by this node's meters. */
  public boolean canMeter(DeviceClass energyClass) {
    return meterableClasses().contains(energyClass);
  }

  /** The one line the daemon logs at start. */
  public String summaryLine() {
    List<String> parts = new ArrayList<>();
    for (MeterProbe p : probes) {
      parts.add(
          switch (p.status()) {
            case Found -> p.source() + " found (" + p.detail() + ")";
            case Unavailable -> p.source() + " unavailable (" + p.detail() + ")";
            case Skipped -> p.source() + " skipped";
          });
    }
    String classes = meterableClasses().stream().map(Enum::name).collect(Collectors.joining(","));
    boolean estimatedOnly =
        meters.stream().allMatch(m -> m instanceof Estimator) && !meters.isEmpty();
    return "metering: meterable classes ["
        + classes
        + "]"
        + (estimatedOnly ? " ESTIMATED ONLY, no energy is measured on this node" : "")
        + "; "
        + String.join("; ", parts);
  }

  /** A listing for {@code sandboxctl meters}, with one fresh sample of every meter. */
  public MeterListing listing() {
    return MeterListing.of(this);
  }

  @Override
  public void close() {
    meters.forEach(Meter::close);
  }
}
