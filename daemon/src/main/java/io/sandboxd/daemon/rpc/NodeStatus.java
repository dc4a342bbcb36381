package io.sandboxd.daemon.rpc;

import io.sandboxd.daemon.NodeIdentity;
import io.sandboxd.daemon.ServingState;
import io.sandboxd.daemon.run.SubmitterPolicy;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.daemon.store.StoreDamage;
import io.sandboxd.daemon.store.StoreException;
import io.sandboxd.daemon.store.StoreVerifier;
import io.sandboxd.metering.DiscoveredMeters;
import io.sandboxd.metering.MeterListing;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * What `sandboxctl status` and `sandboxctl store verify` report, gathered from the daemon's parts.
 */
public final class NodeStatus {

  private final NodeIdentity node;
  private final DiscoveredMeters meters;
  private final RunStore store;
  private final StoreVerifier verifier;
  private final ServingState serving;
  private final long startedNanos;
  private final SubmitterPolicy policy;
  private final Optional<String> metricsListen;
  private final List<String> eventSources;

  public NodeStatus(
      NodeIdentity node,
      DiscoveredMeters meters,
      RunStore store,
      StoreVerifier verifier,
      ServingState serving,
      long startedNanos,
      SubmitterPolicy policy,
      Optional<String> metricsListen,
      List<String> eventSources) {
    this.node = node;
    this.meters = meters;
    this.store = store;
    this.verifier = verifier;
    this.serving = serving;
    this.startedNanos = startedNanos;
    this.policy = policy;
    this.metricsListen = metricsListen;
    this.eventSources = List.copyOf(eventSources);
  }

  static String version() {
    String v = NodeStatus.class.getPackage().getImplementationVersion();
    return "sandboxd " + (v == null ? "0.1.0" : v);
  }

  StatusReply status() {
    StatusReply.Builder b =
        StatusReply.newBuilder()
            .setVersion(version())
            // On the monotonic clock: a wall clock stepped back would make a node look restarted.
            .setUptimeMs(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos))
            .setHostId(node.host().id())
            .setPublicKey(node.host().publicKey())
            .setStoreBytes(store.sizeBytes())
            .setDurableSnapshotBytes(store.durable().blobs().liveBytes())
            .setRunsInFlight(serving.inFlight())
            .setDraining(serving.draining())
            .setPolicy(String.join("; ", policy.summary()))
            .setVerification(verification(verifier.state()))
            .setMetricsListen(metricsListen.orElse(""))
            .addAllEventSources(eventSources);
    for (MeterListing.Entry e : meters.listing().counters()) {
      b.addMeters(
          e.source()
              + " "
              + e.id()
              + " class "
              + e.energyClass()
              + " provenance "
              + e.provenance()
              + (e.error() == null ? "" : " (error: " + e.error() + ")"));
    }
    long total = 0;
    for (Map.Entry<String, Long> e : store.runsByOutcome().entrySet()) {
      b.putRunsByOutcome(e.getKey(), e.getValue());
      total += e.getValue();
    }
    b.setStoredRuns(total);
    b.setCheckpointRuns(checkpointRuns());
    return b.build();
  }

  VerifyStoreReply verifyStore() {
    StoreVerifier.State s = verifier.verifyNow();
    return VerifyStoreReply.newBuilder()
        .setVerification(verification(s))
        .setCheckpointRuns(checkpointRuns())
        .build();
  }

  private long checkpointRuns() {
    try {
      return store.checkpoint().map(cp -> cp.runs()).orElse(0L);
    } catch (StoreException e) {
      return 0; // reported by the verification itself
    }
  }

  static StoreVerification verification(StoreVerifier.State s) {
    StoreVerification.Builder b =
        StoreVerification.newBuilder()
            .setPhase(s.phase().name())
            .setCheckedRuns(s.checkedRuns())
            .setTotalRuns(s.totalRuns())
            .setStartedMs(s.startedMs())
            .setFinishedMs(s.finishedMs())
            .setFailure(s.failure());
    for (StoreDamage d : s.damage()) {
      b.addDamage(d.toString());
    }
    return b.build();
  }
}
