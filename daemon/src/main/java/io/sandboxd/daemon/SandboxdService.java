package io.sandboxd.daemon;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.sandboxd.attest.Envelope;
import io.sandboxd.daemon.rpc.GetRecordsRequest;
import io.sandboxd.daemon.rpc.GetRunRequest;
import io.sandboxd.daemon.rpc.ListRunsReply;
import io.sandboxd.daemon.rpc.ListRunsRequest;
import io.sandboxd.daemon.rpc.RecordsReply;
import io.sandboxd.daemon.rpc.ReplayReply;
import io.sandboxd.daemon.rpc.ReplayRequest;
import io.sandboxd.daemon.rpc.RunInfo;
import io.sandboxd.daemon.rpc.SandboxdGrpc;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import io.sandboxd.daemon.store.RecordKind;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.daemon.store.RunSummary;
import io.sandboxd.daemon.store.StoreException;
import io.sandboxd.daemon.store.TamperedRunException;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The gRPC face of the daemon. Bad input becomes INVALID_ARGUMENT naming the field; a store that
 * cannot write becomes UNAVAILABLE; nothing a client sends can take the daemon down.
 */
final class SandboxdService extends SandboxdGrpc.SandboxdImplBase {
  private static final Logger LOG = Logger.getLogger(SandboxdService.class.getName());
  private static final int DEFAULT_LIST = 100;
  private static final int MAX_LIST = 10_000;

  private final RunSupervisor supervisor;
  private final RunStore store;

  SandboxdService(RunSupervisor supervisor, RunStore store) {
    this.supervisor = supervisor;
    this.store = store;
  }

  @Override
  public void submit(SubmitRequest req, StreamObserver<SubmitReply> out) {
    try {
      RunRecord r =
          supervisor.submit(req.getModule().toByteArray(), req.getGrantsJson(), req.getEntry());
      LOG.info(() -> "run " + r.runId() + " unit " + r.unit() + " -> " + r.outcomeJson());
      out.onNext(
          SubmitReply.newBuilder()
              .setRunId(r.runId())
              .setOutcomeJson(r.outcomeJson())
              .setReceipt(r.receipt().toJsonLine())
              .setAttestation(r.attestation().toJsonLine())
              .setSegment(r.segment().toJsonLine())
              .setLog(r.log())
              .build());
      out.onCompleted();
    } catch (AdmissionException | io.sandboxd.executor.UnitException e) {
      out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
    } catch (io.sandboxd.executor.ExecutorBusyException e) {
      out.onError(Status.RESOURCE_EXHAUSTED.withDescription(e.getMessage()).asRuntimeException());
    } catch (StoreException e) {
      LOG.log(Level.SEVERE, "store failure; run not acknowledged", e);
      out.onError(Status.UNAVAILABLE.withDescription(e.getMessage()).asRuntimeException());
    } catch (RuntimeException e) {
      LOG.log(Level.SEVERE, "submit failed", e);
      out.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
    }
  }

  @Override
  public void getRun(GetRunRequest req, StreamObserver<RunInfo> out) {
    try {
      var run = store.run(req.getRunId());
      if (run.isEmpty()) {
        out.onError(
            Status.NOT_FOUND
                .withDescription("run_id: no run \"" + req.getRunId() + "\" on this node")
                .asRuntimeException());
        return;
      }
      RunInfo.Builder info = info(run.get()).toBuilder();
      store
          .pruned(req.getRunId())
          .ifPresent(
              p ->
                  info.setPruned(
                      "journal, blobs, log and module bytes pruned at "
                          + java.time.Instant.ofEpochMilli(p.prunedMs())
                          + " by "
                          + p.reason()
                          + " (signed records kept)"));
      out.onNext(info.build());
      out.onCompleted();
    } catch (StoreException e) {
      out.onError(Status.UNAVAILABLE.withDescription(e.getMessage()).asRuntimeException());
    }
  }

  @Override
  public void listRuns(ListRunsRequest req, StreamObserver<ListRunsReply> out) {
    try {
      int limit = req.getLimit() == 0 ? DEFAULT_LIST : Math.min(req.getLimit(), MAX_LIST);
      ListRunsReply.Builder b = ListRunsReply.newBuilder();
      for (RunSummary s : store.list(limit)) {
        b.addRuns(info(s));
      }
      out.onNext(b.build());
      out.onCompleted();
    } catch (StoreException e) {
      out.onError(Status.UNAVAILABLE.withDescription(e.getMessage()).asRuntimeException());
    }
  }

  @Override
  public void getRecords(GetRecordsRequest req, StreamObserver<RecordsReply> out) {
    try {
      if (store.run(req.getRunId()).isEmpty()) {
        out.onError(
            Status.NOT_FOUND
                .withDescription("run_id: no run \"" + req.getRunId() + "\" on this node")
                .asRuntimeException());
        return;
      }
      RecordsReply.Builder b = RecordsReply.newBuilder();
      for (Envelope e : store.records(req.getRunId(), RecordKind.SEGMENT)) {
        b.addSegments(e.toJsonLine());
      }
      for (Envelope e : store.records(req.getRunId(), RecordKind.RECEIPT)) {
        b.addReceipts(e.toJsonLine());
      }
      for (Envelope e : store.records(req.getRunId(), RecordKind.ATTESTATION)) {
        b.addAttestations(e.toJsonLine());
      }
      out.onNext(b.build());
      out.onCompleted();
    } catch (TamperedRunException e) {
      out.onError(Status.DATA_LOSS.withDescription(e.getMessage()).asRuntimeException());
    } catch (StoreException e) {
      out.onError(Status.UNAVAILABLE.withDescription(e.getMessage()).asRuntimeException());
    }
  }

  @Override
  public void replay(ReplayRequest req, StreamObserver<ReplayReply> out) {
    try {
      var verdict = supervisor.replay(req.getRunId());
      if (verdict.isEmpty()) {
        out.onError(
            Status.NOT_FOUND
                .withDescription("run_id: no run \"" + req.getRunId() + "\" on this node")
                .asRuntimeException());
        return;
      }
      var v = verdict.get();
      out.onNext(
          ReplayReply.newBuilder()
              .setRunId(v.runId())
              .setMatches(v.matches())
              .setRecordedOutcome(v.recordedOutcome())
              .setReplayedOutcome(v.replayedOutcome())
              .setRecordedRoot(v.recordedRoot() == null ? "" : v.recordedRoot())
              .setReplayedRoot(v.replayedRoot())
              .setDivergence(v.divergence().orElse(""))
              .build());
      out.onCompleted();
    } catch (AdmissionException e) {
      out.onError(Status.FAILED_PRECONDITION.withDescription(e.getMessage()).asRuntimeException());
    } catch (TamperedRunException e) {
      out.onError(Status.DATA_LOSS.withDescription(e.getMessage()).asRuntimeException());
    } catch (StoreException e) {
      out.onError(Status.UNAVAILABLE.withDescription(e.getMessage()).asRuntimeException());
    } catch (RuntimeException e) {
      LOG.log(Level.SEVERE, "replay failed", e);
      out.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
    }
  }

  private static RunInfo info(RunSummary s) {
    if (s.tampered().isPresent()) {
      // Nothing the store holds for this run is shown: only its id and why it is not valid.
      var reason = io.sandboxd.attest.CanonicalJson.mapper().createObjectNode();
      reason.putObject("Tampered").put("reason", s.tampered().get());
      return RunInfo.newBuilder()
          .setRunId(s.runId())
          .setOutcomeJson(io.sandboxd.attest.CanonicalJson.canonicalString(reason))
          .build();
    }
    return RunInfo.newBuilder()
        .setRunId(s.runId())
        .setUnit(s.unit())
        .setGrantsId(s.grantsId())
        .setOutcomeJson(s.outcomeJson())
        .setStartedMs(s.createdMs())
        .setSegments(s.segments())
        .setHead(s.head() == null ? "" : s.head())
        .setLog(s.log())
        .build();
  }
}
