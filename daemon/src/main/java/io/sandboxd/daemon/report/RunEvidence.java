package io.sandboxd.daemon.report;

import io.sandboxd.attest.Envelope;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * One run's signed records as the daemon answered them, before any check, with what the daemon said
 * beside them (its state and submitter are not signed) and a problem already known (the daemon
 * lists it as tampered, its records could not be read, they are not in the node log).
 *
 * @param grantsJson the grant set as submitted (unsigned; checked against the signed grants_id),
 *     empty when not asked for or not kept
 */
public record RunEvidence(
    String runId,
    String state,
    OptionalLong submitterUid,
    List<Envelope> envelopes,
    String grantsJson,
    Optional<String> problem) {
  public RunEvidence {
    envelopes = List.copyOf(envelopes);
  }

  /** Records that came back without a known problem. */
  public static RunEvidence of(
      String runId,
      String state,
      OptionalLong submitterUid,
      List<Envelope> envelopes,
      String grantsJson) {
    return new RunEvidence(runId, state, submitterUid, envelopes, grantsJson, Optional.empty());
  }

  /** A run whose records cannot be used, and why. */
  public static RunEvidence unusable(String runId, OptionalLong submitterUid, String why) {
    return new RunEvidence(runId, "", submitterUid, List.of(), "", Optional.of(why));
  }

  /** The same records with a problem found after they were read. */
  public RunEvidence withProblem(String why) {
    return new RunEvidence(runId, state, submitterUid, envelopes, grantsJson, Optional.of(why));
  }
}
