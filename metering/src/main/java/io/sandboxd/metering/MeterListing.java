package io.sandboxd.metering;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What {@code sandboxctl meters} shows: every probe, every counter with its provenance, resolution
 * and window, and a current reading (µJ since the meter was opened) or why there is none.
 */
public record MeterListing(
    List<DeviceClass> meterableClasses, List<MeterProbe> probes, List<Entry> counters) {

  /**
   * One counter.
   *
   * @param readingUj µJ since the meter was opened, or null when the sample failed ({@code error})
   */
  public record Entry(
      String source,
      String id,
      DeviceClass energyClass,
      DomainRole role,
      boolean additive,
      Provenance provenance,
      long resolutionUj,
      long minWindowNs,
      Long readingUj,
      String error) {}

  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);

  public MeterListing {
    // declaration order, as WIRE.md §2.0 rule 7 sorts enum sets
    meterableClasses = meterableClasses.stream().distinct().sorted().toList();
    probes = List.copyOf(probes);
    counters = List.copyOf(counters);
  }

  static MeterListing of(DiscoveredMeters discovered) {
    List<Entry> entries = new ArrayList<>();
    for (Meter meter : discovered.meters()) {
      MeterSample sample = null;
      String error = null;
      try {
        sample = meter.sample();
      } catch (MeterException e) {
        error = e.getMessage();
      }
      List<MeterDomain> domains = meter.domains();
      for (int i = 0; i < domains.size(); i++) {
        MeterDomain d = domains.get(i);
        entries.add(
            new Entry(
                d.source(),
                d.id(),
                d.energyClass(),
                d.role(),
                d.role().additive(),
                d.provenance(),
                d.resolutionUj(),
                d.minWindowNs(),
                sample == null ? null : sample.cumulativeUj(i),
                error));
      }
    }
    return new MeterListing(
        List.copyOf(discovered.meterableClasses()), discovered.probes(), entries);
  }

  /** The listing as JSON (integers only). */
  public String toJson() {
    try {
      return JSON.writeValueAsString(this);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The listing as a human-readable table. */
  public String toText() {
    StringBuilder out = new StringBuilder();
    out.append("meterable classes: ").append(meterableClasses).append('\n');
    for (MeterProbe p : probes) {
      out.append(
          String.format(Locale.ROOT, "%-10s %-11s %s%n", p.source(), p.status(), p.detail()));
    }
    out.append(
        String.format(
            Locale.ROOT,
            "%n%-10s %-40s %-6s %-8s %-10s %8s %12s %18s%n",
            "SOURCE",
            "COUNTER",
            "CLASS",
            "ROLE",
            "PROVENANCE",
            "RES_UJ",
            "WINDOW_NS",
            "READING_UJ"));
    for (Entry e : counters) {
      out.append(
          String.format(
              Locale.ROOT,
              "%-10s %-40s %-6s %-8s %-10s %8d %12d %18s%n",
              e.source(),
              e.id() + (e.additive() ? "" : " (not summed)"),
              e.energyClass(),
              e.role(),
              e.provenance(),
              e.resolutionUj(),
              e.minWindowNs(),
              e.readingUj() == null ? "error: " + e.error() : e.readingUj().toString()));
    }
    return out.toString();
  }
}
