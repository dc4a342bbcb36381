package io.sandboxd.daemon.store;

import java.util.Optional;

/**
 * One run as listed: its ids, outcome, chain length, head address and log, every one checked
 * against the node's signed records; or, when they do not check, why the run is tampered (and then
 * nothing else about it is to be shown as valid).
 */
public record RunSummary(
    String runId,
    long createdMs,
    String unit,
    String grantsId,
    String outcomeJson,
    int segments,
    String head,
    String log,
    Optional<String> tampered) {

  /** A run whose stored values do not match its signed records: only its id and why. */
  static RunSummary tampered(String runId, String why) {
    return new RunSummary(runId, 0, "", "", "", 0, "", "", Optional.of(why));
  }
}
