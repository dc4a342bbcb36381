package io.sandboxd.enforcer;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpAmendment;
import io.sandboxd.attest.JcpChain;
import io.sandboxd.attest.JcpCheckpoint;
import io.sandboxd.attest.Verification;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The pure amendment decision of WIRE.md §2.11: accept iff the signer is the grant's issuer, the
 * issuer is not the agent, it was not applied before, its checkpoint is in the run's verified
 * chain, and {@code new_grants} is within both the grants in force at that checkpoint and those in
 * force now (an amendment of an early checkpoint may not undo a later one). Breadth is decided by
 * {@link Attenuation}.
 */
public final class Amendments {
  private Amendments() {}

  /** The outcome of {@link #decide}. */
  public sealed interface Verdict {}

  /** Accepted: from now on the run is held to {@code newGrants}. */
  public record Accepted(JcpAmendment amendment, String address, Grants newGrants)
      implements Verdict {}

  /** Refused under {@code rule}; nothing changes. */
  public record Refused(AmendmentRule rule) implements Verdict {}

  /**
   * What the run holds when an amendment arrives.
   *
   * @param issuer the public key hex of the issuer of the run's grant, or null when none is known
   * @param checkpoints the run's checkpoint envelopes in order (verified here)
   * @param grantsById the grants each checkpoint names, by grants_id
   * @param inForce the grants in force now
   * @param applied addresses of the amendments already applied to the run
   */
  public record RunState(
      String issuer,
      List<Envelope> checkpoints,
      Map<String, Grants> grantsById,
      Grants inForce,
      Set<String> applied) {
    public RunState {
      checkpoints = List.copyOf(checkpoints);
      grantsById = Map.copyOf(grantsById);
      applied = Set.copyOf(applied);
    }
  }

  /** Decides on one amendment envelope. */
  public static Verdict decide(Envelope envelope, RunState run) {
    JcpAmendment a;
    Grants newGrants;
    try {
      a = JcpAmendment.fromCore(envelope.core());
      newGrants = Grants.parse(a.newGrants());
    } catch (AttestException | GrantsException e) {
      return refused(new AmendmentRule.BadRecord(e.getMessage()));
    }
    if (!newGrants.grantsId().equals(a.newGrantsId())) {
      return refused(
          new AmendmentRule.BadRecord(
              "amendment.new_grants: not in canonical form (WIRE.md §2.2)"));
    }
    if (envelope.verify(Optional.empty()) instanceof Verification.Invalid inv) {
      return refused(new AmendmentRule.BadRecord(inv.reason()));
    }
    String signer = envelope.publicKey();
    Map<String, JcpCheckpoint> chain = new java.util.HashMap<>();
    String agent = null;
    if (JcpChain.checkpoints(run.checkpoints()) instanceof JcpChain.Verdict.Valid) {
      for (Envelope cp : run.checkpoints()) {
        JcpCheckpoint c = JcpCheckpoint.fromCore(cp.core());
        chain.put(cp.address(), c);
        agent = c.agent();
      }
    }
    if (signer.equals(agent) || a.issuer().equals(agent)) {
      return refused(new AmendmentRule.SignedByAgent(agent));
    }
    if (run.issuer() == null || !signer.equals(run.issuer()) || !a.issuer().equals(run.issuer())) {
      return refused(new AmendmentRule.NotIssuer(signer, run.issuer()));
    }
    if (run.applied().contains(envelope.address())) {
      return refused(new AmendmentRule.Replayed(envelope.address()));
    }
    JcpCheckpoint target = chain.get(a.checkpoint());
    if (target == null) {
      return refused(new AmendmentRule.CheckpointNotInChain(a.checkpoint()));
    }
    Grants atCheckpoint = run.grantsById().get(target.grantsId());
    if (atCheckpoint == null) {
      return refused(new AmendmentRule.CheckpointNotInChain(a.checkpoint()));
    }
    if (Attenuation.check(newGrants, atCheckpoint) instanceof Attenuation.Wider w) {
      return refused(new AmendmentRule.Widens(w, "at the checkpoint"));
    }
    if (Attenuation.check(newGrants, run.inForce()) instanceof Attenuation.Wider w) {
      return refused(new AmendmentRule.Widens(w, "now"));
    }
    return new Accepted(a, envelope.address(), newGrants);
  }

  private static Verdict refused(AmendmentRule rule) {
    return new Refused(rule);
  }
}
