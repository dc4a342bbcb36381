package io.sandboxd.daemon;

import com.google.protobuf.ByteString;
import io.grpc.stub.StreamObserver;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.daemon.rpc.GetOutputReply;
import io.sandboxd.daemon.rpc.GetOutputRequest;
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
import io.sandboxd.daemon.store.RunIo;
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

  SandboxdService(RunSupervisor supervisor, RunStore store) {
    this.supervisor = supervisor;
    this.store = store;
  }

  @Override
  public void submit(SubmitRequest req, StreamObserver<SubmitReply> out) {
    answer(
        "submit",
        out,
        () -> {
          RunRecord r =
              supervisor.submit(
                  req.getModule().toByteArray(),
                  req.getGrantsJson(),
                  req.getEntry(),
                  new CommandInput(
                      req.getArgsList(),
                      req.getStdinSet()
                          ? java.util.Optional.of(req.getStdin().toByteArray())
                          : java.util.Optional.empty()));
          LOG.info(() -> "run " + r.runId() + " unit " + r.unit() + " -> " + r.outcomeJson());
          SubmitReply.Builder reply =
              SubmitReply.newBuilder()
                  .setRunId(r.runId())
                  .setOutcomeJson(r.outcomeJson())
                  .setReceipt(r.receipt().toJsonLine())
                  .setAttestation(r.attestation().toJsonLine())
                  .setSegment(r.segment().toJsonLine())
                  .setLog(r.log());
          if (r.io() != null) {
            reply
                .setStdout(ByteString.copyFrom(r.io().stdout().bytes()))
                .setStderr(ByteString.copyFrom(r.io().stderr().bytes()))
                .setExitStatus(r.io().exitStatus())
                .setExited(r.io().exited());
          }
          return reply.build();
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
          if (run.tampered().isEmpty()) {
            store
                .io(req.getRunId())
                .ifPresent(
                    io ->
                        info.setIoJson(ioJson(io))
                            .setExitStatus(io.exitStatus())
                            .setExited(io.exited()));
          }
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

  @Override
  public void getOutput(GetOutputRequest req, StreamObserver<GetOutputReply> out) {
    answer(
        "getOutput",
        out,
        () -> {
          String runId = req.getRunId();
          if (store.run(runId).isEmpty()) {
            throw new RunNotFoundException(runId);
          }
          String stream = req.getStderr() ? "stderr" : "stdout";
          // The signed attestation names the bytes; the store's copy must hash to that address.
          Attestation a =
              Attestation.fromCore(store.records(runId, RecordKind.ATTESTATION).get(0).core());
          if (a.outputs() == null) {
            throw new OutputUnavailableException(
                "run " + runId + ": the unit was not a WASI command; it has no " + stream);
          }
          Attestation.Blob named = req.getStderr() ? a.outputs().stderr() : a.outputs().stdout();
          byte[] data =
              store
                  .ioBlob(runId, named.address())
                  .orElseThrow(
                      () ->
                          new OutputUnavailableException(
                              "run "
                                  + runId
                                  + ": its "
                                  + stream
                                  + " was pruned by retention (the attestation still names it: "
                                  + named.address()
                                  + ")"));
          GetOutputReply.Builder b =
              GetOutputReply.newBuilder()
                  .setData(ByteString.copyFrom(data))
                  .setAddress(named.address())
                  .setWritten(data.length)
                  .setKept(true);
          store
              .io(runId)
              .ifPresent(
                  io -> {
                    RunIo.Stream s = req.getStderr() ? io.stderr() : io.stdout();
                    b.setWritten(s.written()).setKept(s.kept());
                  });
          return b.build();
        });
  }

  /** A WASI command's inputs and outputs for {@code runs show}: canonical JSON. */
  static String ioJson(RunIo.Stored io) {
    var o = CanonicalJson.mapper().createObjectNode();
    var args = o.putArray("args");
    io.args().forEach(args::add);
    if (io.stdinAddress().isPresent()) {
      o.putObject("stdin").put("address", io.stdinAddress().get()).put("bytes", io.stdinBytes());
    } else {
      o.putNull("stdin");
    }
    for (String name : new String[] {"stdout", "stderr"}) {
      RunIo.Stream s = name.equals("stdout") ? io.stdout() : io.stderr();
      o.putObject(name)
          .put("address", s.address())
          .put("bytes", s.bytes())
          .put("written", s.written())
          .put("kept", s.kept());
    }
    return CanonicalJson.canonicalString(o);
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
