package io.sandboxd.daemon;

import io.grpc.stub.StreamObserver;
import io.sandboxd.attest.Envelope;
import io.sandboxd.daemon.rpc.GetRecordsRequest;
import io.sandboxd.daemon.rpc.GetRunRequest;
import io.sandboxd.daemon.rpc.GetStatusRequest;
import io.sandboxd.daemon.rpc.ListRunsReply;
import io.sandboxd.daemon.rpc.ListRunsRequest;
import io.sandboxd.daemon.rpc.RecordsReply;
import io.sandboxd.daemon.rpc.ReplayReply;
import io.sandboxd.daemon.rpc.ReplayRequest;
import io.sandboxd.daemon.rpc.RunInfo;
import io.sandboxd.daemon.rpc.SandboxdGrpc;
import io.sandboxd.daemon.rpc.StatusReply;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import io.sandboxd.daemon.rpc.VerifyStoreReply;
import io.sandboxd.daemon.rpc.VerifyStoreRequest;
import io.sandboxd.daemon.store.RecordKind;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.daemon.store.RunSummary;
import java.util.function.Supplier;
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
  private final Operations ops;

  /** What the operator-facing calls and the admission gate need (status, drain, metrics). */
  record Operations(ServingState serving, DaemonMetrics metrics, NodeStatus status) {}

  SandboxdService(RunSupervisor supervisor, RunStore store, Operations ops) {
    this.supervisor = supervisor;
    this.store = store;
    this.ops = ops;
  }

  @Override
  public void getStatus(GetStatusRequest req, StreamObserver<StatusReply> out) {
    answer("getStatus", out, () -> ops.status().status());
  }

  @Override
  public void verifyStore(VerifyStoreRequest req, StreamObserver<VerifyStoreReply> out) {
    answer("verifyStore", out, () -> ops.status().verifyStore());
  }

  @Override
  public void submit(SubmitRequest req, StreamObserver<SubmitReply> out) {
    answer(
        "submit",
        out,
        () -> {
          RunRecord r;
          try {
            ops.serving().enter();
            try {
              r =
                  supervisor.submit(
                      req.getModule().toByteArray(), req.getGrantsJson(), req.getEntry());
            } finally {
              ops.serving().exit();
            }
          } catch (RuntimeException e) {
            ops.metrics().refused(ErrorStatus.of(e).getCode().name());
            throw e;
          }
          ops.metrics().recordRun(r);
          LOG.info(() -> "run " + r.runId() + " unit " + r.unit() + " -> " + r.outcomeJson());
          return SubmitReply.newBuilder()
              .setRunId(r.runId())
              .setOutcomeJson(r.outcomeJson())
              .setReceipt(r.receipt().toJsonLine())
              .setAttestation(r.attestation().toJsonLine())
              .setSegment(r.segment().toJsonLine())
              .setLog(r.log())
              .build();
        });
  }

  @Override
  public void getRun(GetRunRequest req, StreamObserver<RunInfo> out) {
    answer(
        "getRun",
        out,
        () -> {
          RunSummary run =
              store.run(req.getRunId()).orElseThrow(() -> new RunNotFoundException(req.getRunId()));
          RunInfo.Builder info = info(run).toBuilder();
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
          return info.build();
        });
  }

  @Override
  public void listRuns(ListRunsRequest req, StreamObserver<ListRunsReply> out) {
    answer(
        "listRuns",
        out,
        () -> {
          int limit = req.getLimit() == 0 ? DEFAULT_LIST : Math.min(req.getLimit(), MAX_LIST);
          ListRunsReply.Builder b = ListRunsReply.newBuilder();
          for (RunSummary s : store.list(limit)) {
            b.addRuns(info(s));
          }
          return b.build();
        });
  }

  @Override
  public void getRecords(GetRecordsRequest req, StreamObserver<RecordsReply> out) {
    answer(
        "getRecords",
        out,
        () -> {
          if (store.run(req.getRunId()).isEmpty()) {
            throw new RunNotFoundException(req.getRunId());
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
          return b.build();
        });
  }

  @Override
  public void replay(ReplayRequest req, StreamObserver<ReplayReply> out) {
    answer(
        "replay",
        out,
        () -> {
          var v =
              supervisor
                  .replay(req.getRunId())
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
        });
  }

  /**
   * Runs one call's body and sends its reply, or the status {@link ErrorStatus} gives its failure:
   * the one place a handler's exception becomes a gRPC status. Unexpected failures (INTERNAL) and
   * the store's are logged with their cause; a client's mistake is not.
   */
  private static <T> void answer(String call, StreamObserver<T> out, Supplier<T> body) {
    T reply;
    try {
      reply = body.get();
    } catch (RuntimeException e) {
      ErrorStatus.Row row = ErrorStatus.rowOf(e);
      if (row == null || row.severe()) {
        LOG.log(Level.SEVERE, call + " failed: " + e.getMessage(), e);
      }
      out.onError(ErrorStatus.of(e).asRuntimeException());
      return;
    }
    out.onNext(reply);
    out.onCompleted();
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
