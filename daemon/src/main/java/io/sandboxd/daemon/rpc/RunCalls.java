package io.sandboxd.daemon.rpc;

import com.google.protobuf.ByteString;
import io.sandboxd.attest.Envelope;
import io.sandboxd.daemon.run.Caller;
import io.sandboxd.daemon.run.RunNotFoundException;
import io.sandboxd.daemon.run.RunSupervisor;
import io.sandboxd.daemon.store.RunRecord;
import java.util.logging.Logger;

/**
 * Single-step runs: a submission waited on to its signed records, and a recorded run replayed
 * ({@code ops}: status, drain and metrics).
 */
record RunCalls(RunSupervisor supervisor, SubmitRequests requests, SandboxdService.Operations ops) {
  private static final Logger LOG = Logger.getLogger(RunCalls.class.getName());

  SubmitReply submit(SubmitRequest req) {
    RunRecord r;
    try {
      r = ops.admitted(() -> supervisor.submit(Caller.current(), requests.decode(req)));
    } catch (RuntimeException e) {
      ops.metrics().refused(ErrorStatus.of(e).getCode().name());
      throw e;
    }
    ops.metrics().recordRun(r);
    // FINE, not INFO: a line per run floods the journal under load (journald rate-limits and
    // drops), and the run's signed records already say what the line said.
    LOG.fine(() -> "run " + r.runId() + " unit " + r.unit() + " -> " + r.outcomeJson());
    SubmitReply.Builder reply =
        SubmitReply.newBuilder()
            .setRunId(r.runId())
            .setOutcomeJson(r.outcomeJson())
            .setReceipt(r.receipt().toJsonLine())
            .setAttestation(r.attestation().toJsonLine())
            .setSegment(r.segment().toJsonLine())
            .setLog(r.log())
            .setClaim(r.claim().map(Envelope::toJsonLine).orElse(""));
    if (r.io() != null) {
      reply
          .setStdout(ByteString.copyFrom(r.io().stdout().bytes()))
          .setStderr(ByteString.copyFrom(r.io().stderr().bytes()))
          .setExitStatus(r.io().exitStatus())
          .setExited(r.io().exited());
    }
    return reply.build();
  }

  ReplayReply replay(ReplayRequest req) {
    var v =
        supervisor
            .replay(Caller.current(), req.getRunId())
            .orElseThrow(() -> new RunNotFoundException(req.getRunId()));
    return ReplayReply.newBuilder()
        .setRunId(v.runId())
        .setMatches(v.matches())
        .setRecordedOutcome(v.recordedOutcome())
        .setReplayedOutcome(v.replayedOutcome())
        .setRecordedRoot(v.recordedRoot() == null ? "" : v.recordedRoot())
        .setReplayedRoot(v.replayedRoot())
        .setDivergence(v.divergence().orElse(""))
        .build();
  }
}
