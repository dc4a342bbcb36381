package io.sandboxd.daemon.report;

import java.util.List;
import java.util.Optional;

/**
 * What a report says about itself: when it was made, from where, for which runs, against which
 * signer keys and node-log checkpoint, and what it left out (e.g. beyond the daemon's list limit).
 */
public record ReportContext(
    long generatedMs,
    String source,
    ReportWindow window,
    List<String> signers,
    Optional<NodeLogCheck> nodeLog,
    List<String> notes) {
  public ReportContext {
    signers = List.copyOf(signers);
    notes = List.copyOf(notes);
  }
}
