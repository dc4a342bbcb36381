package io.sandboxd.daemon.report;

import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * What a report shows, summed from verified runs only: runs per time bucket by outcome; active
 * energy per device class by provenance; idle energy (warm claims, parks) apart by provenance; per
 * module and per submitter use; grants in use; breaches, refusals and durable runs. Energies in µJ,
 * integers throughout.
 */
public record ReportAggregates(
    long bucketMs,
    SortedMap<Long, Map<String, Long>> runsByBucket,
    Map<DeviceClass, Map<Provenance, Long>> energyByClass,
    Map<Provenance, Long> warmIdleByProvenance,
    Map<Provenance, Long> parkedIdleByProvenance,
    List<Usage> modules,
    List<Usage> submitters,
    List<GrantUse> grants,
    List<VerifiedRun> breaches,
    List<VerifiedRun> refusals,
    List<VerifiedRun> durable) {

  /** Outcome kinds in the order plots and tables list them. */
  public static final List<String> OUTCOMES =
      List.of("Completed", "Failed", "Terminated", "Declined");

  /** Bucket widths a timeline may use, narrowest first. */
  static final long[] BUCKETS = {
    60_000L, 3_600_000L, 86_400_000L, 7 * 86_400_000L, 30 * 86_400_000L, 365 * 86_400_000L
  };

  /** The most buckets a timeline is drawn with. */
  static final int MAX_BUCKETS = 60;

  /** One module's or submitter's share. */
  public record Usage(
      String key, long runs, long cpuMs, long idleUj, Map<Provenance, Long> activeByProvenance) {
    /** Energy the runs used while executing (their receipts' total_uj). */
    public long activeUj() {
      return activeByProvenance.values().stream().mapToLong(Long::longValue).sum();
    }

    /** Active plus idle energy. */
    public long totalUj() {
      return Math.addExact(activeUj(), idleUj);
    }
  }

  /** A grant set in use: how many runs ran under it, and its text when verified. */
  public record GrantUse(String grantsId, long runs, Optional<String> text) {}

  /** Sums {@code runs} (already verified). */
  public static ReportAggregates of(List<VerifiedRun> runs) {
    long bucket = bucketFor(runs);
    SortedMap<Long, Map<String, Long>> timeline = new TreeMap<>();
    Map<DeviceClass, Map<Provenance, Long>> byClass = new EnumMap<>(DeviceClass.class);
    Map<Provenance, Long> warm = new EnumMap<>(Provenance.class);
    Map<Provenance, Long> parked = new EnumMap<>(Provenance.class);
    Map<String, UsageSum> modules = new HashMap<>();
    Map<String, UsageSum> submitters = new HashMap<>();
    Map<String, GrantSum> grants = new LinkedHashMap<>();
    List<VerifiedRun> breaches = new ArrayList<>();
    List<VerifiedRun> refusals = new ArrayList<>();
    List<VerifiedRun> durable = new ArrayList<>();
    for (VerifiedRun r : runs) {
      long at = Math.floorDiv(r.startedMs(), bucket) * bucket;
      timeline
          .computeIfAbsent(at, k -> new LinkedHashMap<>())
          .merge(r.outcomeKind(), 1L, Long::sum);
      long idle = 0;
      Provenance warmProv = r.claimProvenance().orElse(Provenance.Estimator);
      for (Receipt rc : r.receipts()) {
        for (Map.Entry<DeviceClass, ClassEnergy> e : rc.energy().entrySet()) {
          byClass
              .computeIfAbsent(e.getKey(), k -> new EnumMap<>(Provenance.class))
              .merge(e.getValue().provenance(), e.getValue().uj(), Math::addExact);
        }
        if (rc.idleUj() > 0) {
          warm.merge(warmProv, rc.idleUj(), Math::addExact);
          idle = Math.addExact(idle, rc.idleUj());
        }
      }
      for (RunSegment s : r.segments()) {
        if (s.idleUj() > 0) {
          parked.merge(s.idleProvenance(), s.idleUj(), Math::addExact);
          idle = Math.addExact(idle, s.idleUj());
        }
      }
      modules.computeIfAbsent(r.unit(), UsageSum::new).add(r, idle);
      String who =
          r.submitterUid().isPresent() ? "uid " + r.submitterUid().getAsLong() : "not recorded";
      submitters.computeIfAbsent(who, UsageSum::new).add(r, idle);
      GrantSum g = grants.computeIfAbsent(r.grantsId(), k -> new GrantSum());
      g.runs++;
      if (g.text.isEmpty()) {
        g.text = r.grantsText();
      }
      Optional<Outcome> o = r.outcome();
      if (o.isPresent() && o.get() instanceof Outcome.Terminated) {
        breaches.add(r);
      }
      if (o.isPresent() && o.get() instanceof Outcome.Declined) {
        refusals.add(r);
      }
      if (r.segments().size() > 1) {
        durable.add(r);
      }
    }
    List<GrantUse> grantUses = new ArrayList<>();
    grants.forEach((id, g) -> grantUses.add(new GrantUse(id, g.runs, g.text)));
    grantUses.sort(Comparator.comparingLong(GrantUse::runs).reversed());
    return new ReportAggregates(
        bucket,
        timeline,
        byClass,
        warm,
        parked,
        ranked(modules),
        ranked(submitters),
        grantUses,
        breaches,
        refusals,
        durable);
  }

  /** Highest total energy first, then most CPU, then by key. */
  private static List<Usage> ranked(Map<String, UsageSum> sums) {
    return sums.values().stream()
        .map(UsageSum::usage)
        .sorted(
            Comparator.comparingLong(Usage::totalUj)
                .thenComparingLong(Usage::cpuMs)
                .reversed()
                .thenComparing(Usage::key))
        .toList();
  }

  /** The narrowest bucket that spans the runs in at most {@link #MAX_BUCKETS}. */
  static long bucketFor(List<VerifiedRun> runs) {
    if (runs.isEmpty()) {
      return BUCKETS[0];
    }
    long first = runs.stream().mapToLong(VerifiedRun::startedMs).min().getAsLong();
    long last = runs.stream().mapToLong(VerifiedRun::startedMs).max().getAsLong();
    for (long b : BUCKETS) {
      if (Math.floorDiv(last, b) - Math.floorDiv(first, b) < MAX_BUCKETS) {
        return b;
      }
    }
    return BUCKETS[BUCKETS.length - 1];
  }

  /** The top {@code n} of {@code list} by {@code key}, largest first. */
  public static List<Usage> top(List<Usage> list, int n, Function<Usage, Long> key) {
    return list.stream()
        .sorted(Comparator.comparing(key).reversed().thenComparing(Usage::key))
        .limit(n)
        .toList();
  }

  private static final class UsageSum {
    final String key;
    long runs;
    long cpuMs;
    long idleUj;
    final Map<Provenance, Long> active = new EnumMap<>(Provenance.class);

    UsageSum(String key) {
      this.key = key;
    }

    void add(VerifiedRun r, long idle) {
      runs++;
      cpuMs = Math.addExact(cpuMs, r.cpuTimeMs());
      idleUj = Math.addExact(idleUj, idle);
      for (Receipt rc : r.receipts()) {
        for (ClassEnergy e : rc.energy().values()) {
          active.merge(e.provenance(), e.uj(), Math::addExact);
        }
      }
    }

    Usage usage() {
      return new Usage(key, runs, cpuMs, idleUj, Map.copyOf(active));
    }
  }

  private static final class GrantSum {
    long runs;
    Optional<String> text = Optional.empty();
  }
}
