package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetStatusRequest;
import io.sandboxd.daemon.rpc.StatusReply;
import io.sandboxd.daemon.rpc.StoreVerification;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * `sandboxctl status [--json]`: what the daemon says about itself (version, uptime, identity,
 * meters, store, runs, policy, store verification).
 */
@Command(name = "status", description = "Show the running daemon's state.")
final class StatusCommand extends DaemonCommand {
  @Mixin JsonOutput json;

  @Override
  int ask(DaemonClient c) {
    StatusReply s =
        c.stub()
            .withDeadlineAfter(30, TimeUnit.SECONDS)
            .getStatus(GetStatusRequest.getDefaultInstance());
    if (json.on) {
      JsonOutput.print(toJson(s));
    } else {
      System.out.println(toText(s));
    }
    return 0;
  }

  static ObjectNode toJson(StatusReply s) {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("version", s.getVersion());
    o.put("uptime_ms", s.getUptimeMs());
    o.put("host_id", s.getHostId());
    o.put("public_key", s.getPublicKey());
    s.getMetersList().forEach(o.putArray("meters")::add);
    ObjectNode store = o.putObject("store");
    store.put("bytes", s.getStoreBytes());
    store.put("runs", s.getStoredRuns());
    store.put("checkpoint_runs", s.getCheckpointRuns());
    store.put("durable_snapshot_bytes", s.getDurableSnapshotBytes());
    ObjectNode runs = o.putObject("runs");
    ObjectNode byOutcome = runs.putObject("by_outcome");
    s.getRunsByOutcomeMap().forEach(byOutcome::put);
    runs.put("in_flight", s.getRunsInFlight());
    o.put("draining", s.getDraining());
    o.put("policy", s.getPolicy());
    com.fasterxml.jackson.databind.node.ArrayNode sources = o.putArray("event_sources");
    s.getEventSourcesList().forEach(sources::add);
    o.set("verification", verificationJson(s.getVerification()));
    o.put("metrics_listen", s.getMetricsListen());
    return o;
  }

  static ObjectNode verificationJson(StoreVerification v) {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("phase", v.getPhase());
    o.put("checked_runs", v.getCheckedRuns());
    o.put("total_runs", v.getTotalRuns());
    v.getDamageList().forEach(o.putArray("damage")::add);
    o.put("started_ms", v.getStartedMs());
    o.put("finished_ms", v.getFinishedMs());
    o.put("failure", v.getFailure());
    return o;
  }

  static String toText(StatusReply s) {
    StringBuilder b = new StringBuilder();
    line(b, "version", s.getVersion());
    line(b, "uptime", Duration.ofMillis(s.getUptimeMs()).toString().substring(2).toLowerCase());
    line(b, "host", s.getHostId());
    line(b, "public key", s.getPublicKey());
    for (String m : s.getMetersList()) {
      line(b, "meter", m);
    }
    line(
        b,
        "store",
        s.getStoredRuns()
            + " runs, "
            + s.getStoreBytes()
            + " bytes, checkpoint sealed at "
            + s.getCheckpointRuns()
            + " runs; durable runs' snapshots "
            + s.getDurableSnapshotBytes()
            + " bytes");
    StringBuilder runs = new StringBuilder();
    for (Map.Entry<String, Long> e : new java.util.TreeMap<>(s.getRunsByOutcomeMap()).entrySet()) {
      runs.append(e.getKey()).append(' ').append(e.getValue()).append(", ");
    }
    runs.append(s.getRunsInFlight()).append(" in flight");
    line(b, "runs", runs.toString());
    line(b, "admitting", s.getDraining() ? "no (draining: stopping)" : "yes");
    line(b, "policy", s.getPolicy());
    line(
        b,
        "mint events",
        s.getEventSourcesList().isEmpty()
            ? "signed by a standing grant's issuer only"
            : "signed by a standing grant's issuer, or by "
                + String.join(", ", s.getEventSourcesList())
                + " (standing.event_sources)");
    line(b, "verification", verificationText(s.getVerification()));
    for (String d : s.getVerification().getDamageList()) {
      line(b, "  damage", d);
    }
    line(
        b,
        "metrics",
        s.getMetricsListen().isEmpty() ? "off" : "http://" + s.getMetricsListen() + "/metrics");
    return b.toString().stripTrailing();
  }

  static String verificationText(StoreVerification v) {
    String when = v.getFinishedMs() == 0 ? "" : " at " + Instant.ofEpochMilli(v.getFinishedMs());
    return switch (v.getPhase()) {
      case "VERIFIED" -> "verified: all " + v.getTotalRuns() + " runs" + when;
      case "DAMAGED" ->
          "DAMAGED: " + v.getDamageCount() + " finding(s) in " + v.getTotalRuns() + " runs" + when;
      case "RUNNING" -> "running: " + v.getCheckedRuns() + " runs checked so far";
      case "FAILED" -> "FAILED: " + v.getFailure();
      default -> v.getPhase().toLowerCase();
    };
  }

  private static void line(StringBuilder b, String key, String value) {
    b.append(String.format("%-13s", key)).append(value).append('\n');
  }
}
