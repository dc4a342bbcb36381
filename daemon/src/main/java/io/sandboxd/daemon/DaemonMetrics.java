package io.sandboxd.daemon;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Receipt;
import io.sandboxd.daemon.run.RunPhases;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.StoreVerifier;
import io.sandboxd.executor.JournalEntry;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * The daemon's meters, in Prometheus naming ({@code sandboxd_} prefix, base units, {@code _total}
 * counters). Labels take values from closed sets only (outcome kinds, breach kinds, host calls and
 * decisions, device classes and provenances): never a run id, unit or grants address.
 */
public final class DaemonMetrics {
  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final Timer storeAppend;
  private final Map<RunPhases.Phase, Timer> runPhases = new EnumMap<>(RunPhases.Phase.class);

  public DaemonMetrics() {
    storeAppend =
        Timer.builder("sandboxd.store.append")
            .description(
                "Time one commit of the store took, fsync included: under group commit one commit"
                    + " holds every run queued behind the one before")
            .register(registry);
    for (RunPhases.Phase p : RunPhases.Phase.values()) {
      // Registered up front, so each phase shows (count 0) before a first run, and a run's
      // timing is a map read, not a registry lookup.
      runPhases.put(
          p,
          Timer.builder("sandboxd.run.phase")
              .description(
                  "Time a submitted run spent in each phase on its handler thread: admit, launch"
                      + " (absent for a declined run), seal, store (the wait for its commit)")
              .tag("phase", p.name().toLowerCase(java.util.Locale.ROOT))
              .register(registry));
    }
  }

  /** One phase of one submitted run (a {@link RunPhases} for the supervisor). */
  public void runPhase(RunPhases.Phase phase, long nanos) {
    runPhases.get(phase).record(nanos, TimeUnit.NANOSECONDS);
  }

  /** Prometheus text exposition of every meter. */
  public String scrape() {
    return registry.scrape();
  }

  /**
   * Registers a gauge read at each scrape: for other parts of the daemon (warm pools: {@code
   * sandboxd.pool.*}). {@code name} is dotted Micrometer style and becomes {@code sandboxd_...};
   * {@code tags} are alternating key, value pairs from closed sets.
   */
  public <T> void gauge(
      String name, String description, T obj, ToDoubleFunction<T> value, String... tags) {
    Gauge.builder(name, obj, value).description(description).tags(tags).register(registry);
  }

  /** A gauge over a supplier. */
  public void gauge(String name, String description, Supplier<Number> value, String... tags) {
    Gauge.builder(name, value).description(description).tags(tags).register(registry);
  }

  /** Records one acknowledged run: its outcome, breach, energy and host calls. */
  public void recordRun(RunRecord r) {
    Outcome outcome = Attestation.outcomeOf(r.attestation().core());
    counter("sandboxd.runs", "Runs recorded, by outcome", "outcome", outcomeKind(outcome))
        .increment();
    if (outcome instanceof Outcome.Terminated t) {
      counter("sandboxd.breaches", "Budget breaches, by kind", "kind", t.breach().name())
          .increment();
    }
    for (Map.Entry<DeviceClass, ClassEnergy> e : Receipt.energyOf(r.receipt().core()).entrySet()) {
      // Joules as a double: a base unit; the signed receipt keeps the exact µJ.
      registry
          .counter(
              "sandboxd.energy.joules",
              "class",
              e.getKey().name(),
              "provenance",
              e.getValue().provenance().name())
          .increment(e.getValue().uj() / 1e6);
    }
    for (String line : r.journalEntries()) {
      JournalEntry j = JournalEntry.parse(line);
      counter(
              "sandboxd.host.calls",
              "Host calls units made, by call and decision",
              "call",
              j.call(),
              "decision",
              j.decision())
          .increment();
    }
  }

  /** A submission refused before it ran, by gRPC status code. */
  public void refused(String code) {
    counter("sandboxd.submissions.refused", "Submissions refused, by status", "code", code)
        .increment();
  }

  public void storeAppend(long nanos) {
    storeAppend.record(nanos, TimeUnit.NANOSECONDS);
  }

  /** A finished store verification pass. */
  public void verification(StoreVerifier.State s) {
    counter(
            "sandboxd.store.verifications",
            "Store verification passes, by result",
            "result",
            s.phase().name().toLowerCase(java.util.Locale.ROOT))
        .increment();
  }

  private Counter counter(String name, String description, String... tags) {
    return Counter.builder(name).description(description).tags(tags).register(registry);
  }

  static String outcomeKind(Outcome o) {
    if (o instanceof Outcome.Completed) {
      return "Completed";
    } else if (o instanceof Outcome.Terminated) {
      return "Terminated";
    } else if (o instanceof Outcome.Declined) {
      return "Declined";
    }
    return "Failed";
  }
}
