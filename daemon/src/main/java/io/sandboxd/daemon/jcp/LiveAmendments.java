package io.sandboxd.daemon.jcp;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpAmendment;
import io.sandboxd.attest.JcpCheckpoint;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.daemon.durable.AmendmentLedger;
import io.sandboxd.daemon.durable.BundleJcp;
import io.sandboxd.daemon.durable.DurableRunException;
import io.sandboxd.daemon.durable.DurableRuns;
import io.sandboxd.daemon.run.AdmissionException;
import io.sandboxd.daemon.store.DurableRunTable;
import io.sandboxd.daemon.store.JcpTable;
import io.sandboxd.enforcer.Amendments;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Checkpoints of durable runs under the agent key and the issuer's tighten-only amendments of them
 * (WIRE.md §2.11), applied to the live run between two of its host calls.
 */
public final class LiveAmendments implements AmendmentLedger {
  /** Most checkpoints one run keeps: each amendment decision verifies the whole chain. */
  public static final int MAX_CHECKPOINTS = 4096;

  private final StandingGrants standing;
  private final DurableRuns runs;

  public LiveAmendments(StandingGrants standing, DurableRuns runs) {
    this.standing = standing;
    this.runs = runs;
  }

  /** A checkpoint signed by the agent key, naming the run's chain head and the grants in force. */
  public synchronized Envelope checkpoint(String runId) {
    DurableRunTable.Run run = runs.run(runId);
    if (run.state().settled() && run.state() != DurableRunTable.State.parked) {
      throw new DurableRunException.Refused(
          "run " + runId + " is " + run.state() + ": only a running or parked run is checkpointed");
    }
    List<Envelope> chain = runs.chain(runId);
    JcpTable table = standing.table();
    List<Envelope> cps = table.checkpoints(runId);
    if (cps.size() >= MAX_CHECKPOINTS) {
      throw new JcpRefusedException.Exhausted(
          "max_checkpoints", "run " + runId + " holds " + MAX_CHECKPOINTS + " checkpoints already");
    }
    String here = standing.agentKey().hex();
    if (!cps.isEmpty() && !JcpCheckpoint.fromCore(cps.get(0).core()).agent().equals(here)) {
      // Carried in by a bundle: a run's checkpoints have one agent throughout (WIRE.md §2.14).
      throw new DurableRunException.Refused(
          "run "
              + runId
              + " was checkpointed by agent "
              + JcpCheckpoint.fromCore(cps.get(0).core()).agent()
              + " on the node it came from; a checkpoint by this node's agent "
              + here
              + " would break its checkpoint chain (one agent throughout)");
    }
    long seq = cps.size();
    String prev = cps.isEmpty() ? null : cps.get(cps.size() - 1).address();
    JcpCheckpoint c =
        new JcpCheckpoint(
            runId,
            seq,
            prev,
            chain.get(chain.size() - 1).address(),
            run.grantsId(),
            standing.agentKey().hex());
    Envelope env = standing.signAsAgent(c);
    table.appendCheckpoint(runId, seq, env);
    return env;
  }

  /** Applies an issuer-signed amendment if every rule of §2.11 holds, or names the rule broken. */
  public synchronized Amendments.Accepted amend(String runId, String amendmentJson) {
    Envelope env;
    try {
      env = Envelope.fromJson(CanonicalJson.parse(amendmentJson));
      JcpAmendment.fromCore(env.core());
    } catch (AttestException | IllegalArgumentException e) {
      throw new AdmissionException("amendment: " + e.getMessage(), e);
    }
    DurableRunTable.Run run = runs.run(runId);
    JcpTable table = standing.table();
    Grants inForce = parse(run.grantsJson());
    Map<String, Grants> byId = new HashMap<>();
    byId.put(inForce.grantsId(), inForce);
    // The grant the run started under (its first segment's grants_id) names the issuer: a child
    // minted here under an issuer's policy. A run under any other grant has no issuer to amend it.
    String startId = RunSegment.fromCore(runs.chain(runId).get(0).core()).grantsId();
    String issuer = null;
    // No issuer (neither minted here nor carried in): rule issuer refuses below.
    Optional<StandingGrants.Resolved> minted = minted(runId);
    if (minted.isPresent()) {
      issuer = minted.get().issuer();
      byId.put(startId, parse(minted.get().grantsJson()));
    }
    Set<String> applied = new HashSet<>();
    for (Envelope a : table.amendments(runId)) {
      applied.add(a.address());
      Grants g = Grants.parse(JcpAmendment.fromCore(a.core()).newGrants());
      byId.put(g.grantsId(), g);
    }
    Amendments.Verdict v =
        Amendments.decide(
            env, new Amendments.RunState(issuer, table.checkpoints(runId), byId, inForce, applied));
    if (v instanceof Amendments.Refused r) {
      throw new JcpRefusedException(r.rule().rule(), r.rule().detail());
    }
    Amendments.Accepted ok = (Amendments.Accepted) v;
    // Grants first: a crash before the amendment row leaves a tighter run that may be amended
    // again with the same record, never a recorded amendment that is not in force. A running
    // run's segment ends where the amendment takes effect (DurableRuns.amendAtBoundary).
    runs.amendAtBoundary(
        runId,
        ok.newGrants(),
        () -> table.appendAmendment(runId, env, standing.nowMs()),
        DurableRuns.AMEND_BOUNDARY_WAIT_MS);
    return ok;
  }

  @Override
  public boolean amendedTo(String runId, String grantsId) {
    for (Envelope a : standing.table().amendments(runId)) {
      if (JcpAmendment.fromCore(a.core()).newGrantsId().equals(grantsId)) {
        return true;
      }
    }
    return false;
  }

  @Override
  public io.sandboxd.attest.Attestation.Jcp jcpOf(String runId) {
    List<String> applied =
        standing.table().amendments(runId).stream().map(Envelope::address).toList();
    Optional<StandingGrants.Resolved> minted = minted(runId);
    if (minted.isEmpty() && applied.isEmpty()) {
      return null;
    }
    return new io.sandboxd.attest.Attestation.Jcp(
        minted.map(StandingGrants.Resolved::policy).orElse(null),
        minted.map(StandingGrants.Resolved::child).orElse(null),
        applied);
  }

  @Override
  public void checkResume(String runId) {
    List<Envelope> chain = runs.chain(runId);
    if (!chain.isEmpty()) {
      standing.checkHeld(RunSegment.fromCore(chain.get(0).core()).grantsId());
    }
  }

  @Override
  public List<Envelope> records(String runId) {
    List<Envelope> chain = runs.chain(runId);
    if (chain.isEmpty()) {
      return List.of();
    }
    return standing.runRecords(runId, RunSegment.fromCore(chain.get(0).core()).grantsId());
  }

  @Override
  public synchronized void carry(String runId, BundleJcp.Checked jcp) {
    if (jcp.isEmpty()) {
      return;
    }
    standing
        .table()
        .carry(runId, jcp.evidence(), jcp.checkpoints(), jcp.amendments(), standing.nowMs());
  }

  /**
   * The minted grant the run started under: a child minted here, or the one its bundle carried in
   * (checked at import: the holder signed it under the policy, which names the issuer).
   */
  private Optional<StandingGrants.Resolved> minted(String runId) {
    List<Envelope> chain = runs.chain(runId);
    if (chain.isEmpty()) {
      return Optional.empty();
    }
    String startId = RunSegment.fromCore(chain.get(0).core()).grantsId();
    try {
      return Optional.of(standing.resolve(startId));
    } catch (JcpRefusedException.NotFound e) {
      return BundleJcp.minted(standing.table().carried(runId), startId)
          .map(m -> new StandingGrants.Resolved(m.grantsJson(), m.policy(), m.child(), m.issuer()));
    }
  }

  private static Grants parse(String json) {
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8));
  }
}
