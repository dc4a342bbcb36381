package io.sandboxd.daemon.cli;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.enforcer.AmendmentChain;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The JCP part of `sandboxctl verify`: each run's JCP records against its (already verified)
 * segment chain through {@link AmendmentChain}, and an attestation's {@code jcp} field against the
 * records given: the same policy, child and amendments, in order.
 */
final class JcpEvidence {
  private JcpEvidence() {}

  /**
   * Checks {@code jcp} beside {@code records}; on success adds one line per run to {@code lines},
   * else returns where and why it fails.
   */
  static Optional<String> check(List<Envelope> records, List<Envelope> jcp, List<String> lines) {
    Map<String, List<Envelope>> chains = new LinkedHashMap<>();
    List<Attestation> attestations = new ArrayList<>();
    for (Envelope e : records) {
      String schema = e.schema().orElse("");
      if (schema.equals(RunSegment.SCHEMA)) {
        chains
            .computeIfAbsent(RunSegment.fromCore(e.core()).runId(), k -> new ArrayList<>())
            .add(e);
      } else if (schema.equals(Attestation.SCHEMA)) {
        attestations.add(Attestation.fromCore(e.core()));
      }
    }
    if (chains.isEmpty()) {
      return Optional.of("input: JCP records without a run's segment chain to check them against");
    }
    for (Map.Entry<String, List<Envelope>> c : chains.entrySet()) {
      List<Envelope> segs = new ArrayList<>(c.getValue());
      segs.sort(Comparator.comparingLong(s -> RunSegment.fromCore(s.core()).seq()));
      AmendmentChain.Verdict v = AmendmentChain.verify(segs, jcp);
      if (v instanceof AmendmentChain.Verdict.Invalid inv) {
        return Optional.of(inv.where() + ": " + inv.reason());
      }
      List<String> amendments = ((AmendmentChain.Verdict.Valid) v).amendments();
      for (Attestation a : attestations) {
        if (a.jcp() != null && !a.jcp().amendments().equals(amendments)) {
          return Optional.of(
              "attestation "
                  + a.receipt()
                  + ": jcp.amendments "
                  + a.jcp().amendments()
                  + " differ from the issuer-signed amendments given "
                  + amendments);
        }
      }
      lines.add(
          "valid: run "
              + c.getKey()
              + ": "
              + amendments.size()
              + " amendment(s), each issuer-signed and tightening, at the segments it names");
    }
    return Optional.empty();
  }
}
