package io.sandboxd.daemon.rpc;

import com.google.protobuf.ByteString;
import io.grpc.stub.StreamObserver;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.daemon.DaemonMetrics;
import io.sandboxd.daemon.ServingState;
import io.sandboxd.daemon.durable.DurableRuns;
import io.sandboxd.daemon.durable.ExportHandoff;
import io.sandboxd.daemon.durable.IntotoExport;
import io.sandboxd.daemon.fleet.FleetRecords;
import io.sandboxd.daemon.jcp.StandingGrants;
import io.sandboxd.daemon.run.Admission;
import io.sandboxd.daemon.run.AdmissionException;
import io.sandboxd.daemon.run.Caller;
import io.sandboxd.daemon.run.CommandInput;
import io.sandboxd.daemon.run.OfferedEnvironments;
import io.sandboxd.daemon.run.OutputUnavailableException;
import io.sandboxd.daemon.run.RunNotFoundException;
import io.sandboxd.daemon.run.RunSupervisor;
import io.sandboxd.daemon.run.Submission;
import io.sandboxd.daemon.store.RecordKind;
import io.sandboxd.daemon.store.RunIo;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.daemon.store.RunSummary;
import io.sandboxd.executor.FactoryCache;
import io.sandboxd.executor.ModuleStore;
import io.sandboxd.warmpool.PoolStats;
import io.sandboxd.warmpool.WarmPools;
import java.util.List;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The gRPC face of the daemon. Bad input becomes INVALID_ARGUMENT naming the field; a store that
 * cannot write becomes UNAVAILABLE; nothing a client sends can take the daemon down.
 */
public final class SandboxdService extends SandboxdGrpc.SandboxdImplBase {
  private static final Logger LOG = Logger.getLogger(SandboxdService.class.getName());
  private static final int DEFAULT_LIST = 100;
  private static final int MAX_LIST = 10_000;

  private final RunSupervisor supervisor;
  private final RunStore store;
  private final ModuleStore modules;
  // The node's warm pools; null when it keeps none.
  private final WarmPools pools;

  // Status, drain and metrics; null for a service built without them (tests).
  private final Operations ops;

  // Minted child grants a submission may name (SubmitRequest.minted_grants); null: none.
  private volatile StandingGrants standing;
  // Durable runs (issue 12); null for a service built without them (tests).
  private DurableRuns durable;

  /** Serves durable runs through {@code d}. */
  public SandboxdService durable(DurableRuns d) {
    this.durable = d;
    return this;
  }

  /** What the operator-facing calls and the admission gate need (status, drain, metrics). */
  public record Operations(ServingState serving, DaemonMetrics metrics, NodeStatus status) {}

  public SandboxdService(RunSupervisor supervisor, RunStore store, ModuleStore modules) {
    this(supervisor, store, modules, null, null);
  }

  public SandboxdService(
      RunSupervisor supervisor,
      RunStore store,
      ModuleStore modules,
      WarmPools pools,
      Operations ops) {
    this.supervisor = supervisor;
    this.store = store;
    this.modules = modules;
    this.pools = pools;
    this.ops = ops;
  }

  /** Resolves SubmitRequest.minted_grants against {@code standing} from now on. */
  public SandboxdService useStanding(StandingGrants standing) {
    this.standing = standing;
    return this;
  }

  @Override
  public void getStatus(GetStatusRequest req, StreamObserver<StatusReply> out) {
    answer("getStatus", out, () -> operations().status().status());
  }

  @Override
  public void verifyStore(VerifyStoreRequest req, StreamObserver<VerifyStoreReply> out) {
    answer("verifyStore", out, () -> operations().status().verifyStore());
  }

  // ---- fleet records (issue 14) ----

  @Override
  public void getLogCheckpoint(
      io.sandboxd.daemon.rpc.GetLogCheckpointRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.LogCheckpointReply> out) {
    answer(
        "getLogCheckpoint",
        out,
        () -> {
          RunStore.LogNote n = fleet().checkpoint();
          io.sandboxd.attest.NoteVerifier v =
              io.sandboxd.attest.LogCheckpoint.verifier(store.logOrigin(), store.publicKey());
          return io.sandboxd.daemon.rpc.LogCheckpointReply.newBuilder()
              .setNote(n.note())
              .setTreeSize(n.treeSize())
              .setOrigin(v.name())
              .setPublicKey(store.publicKey().hex())
              .setVkey(v.vkey())
              .build();
        });
  }

  @Override
  public void proveInclusion(
      io.sandboxd.daemon.rpc.ProveInclusionRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.LogProofReply> out) {
    answer("proveInclusion", out, () -> proofReply(fleet().proveInclusion(req.getAddress())));
  }

  @Override
  public void proveConsistency(
      io.sandboxd.daemon.rpc.ProveConsistencyRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.LogProofReply> out) {
    answer(
        "proveConsistency",
        out,
        () ->
            proofReply(
                fleet()
                    .proveConsistency(
                        RequestFields.upTo("old_size", req.getOldSize(), Long.MAX_VALUE),
                        RequestFields.upTo("new_size", req.getNewSize(), Long.MAX_VALUE))));
  }

  @Override
  public void aggregateFleet(
      io.sandboxd.daemon.rpc.AggregateFleetRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.AggregateFleetReply> out) {
    answer(
        "aggregateFleet",
        out,
        () ->
            io.sandboxd.daemon.rpc.AggregateFleetReply.newBuilder()
                .setEnvelopeJson(
                    fleet()
                        .aggregate(
                            RequestFields.upTo("since_ms", req.getSinceMs(), Long.MAX_VALUE),
                            RequestFields.upTo("until_ms", req.getUntilMs(), Long.MAX_VALUE))
                        .toJsonLine())
                .build());
  }

  @Override
  public void proveFleet(
      io.sandboxd.daemon.rpc.ProveFleetRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.LogProofReply> out) {
    answer(
        "proveFleet",
        out,
        () ->
            proofReply(
                fleet().prove(req.getRunId(), req.getAggregateJson(), req.getOldAggregateJson())));
  }

  private FleetRecords fleetRecords;

  private synchronized FleetRecords fleet() {
    if (fleetRecords == null) {
      fleetRecords = new FleetRecords(store);
    }
    return fleetRecords;
  }

  private static io.sandboxd.daemon.rpc.LogProofReply proofReply(String json) {
    return io.sandboxd.daemon.rpc.LogProofReply.newBuilder().setProofJson(json).build();
  }

  private Operations operations() {
    if (ops == null) {
      throw new IllegalStateException("this service was built without node status");
    }
    return ops;
  }

  /**
   * The submission's module bytes: those sent, or those held at {@code module_address} (exactly one
   * of the two may be given), within the node's module size.
   */
  /**
   * Decodes {@code req} into the one {@link Submission} every path takes (waiting or detached),
   * refusing a malformed request naming its field: the module by its bytes or the address of held
   * bytes, the grants given or a minted child's (one use of it taken), the command's argv and
   * stdin.
   */
  private Submission submission(SubmitRequest req) {
    if (req.getDetach() && (req.getArgsCount() > 1 || req.getStdinSet())) {
      throw new AdmissionException(
          "detach: a detached run takes no args or stdin (nobody is there to read its output)",
          null);
    }
    String grantsJson = req.getGrantsJson();
    io.sandboxd.attest.Attestation.Jcp jcp = null;
    if (!req.getMintedGrants().isEmpty()) {
      StandingGrants grants = standing;
      if (!grantsJson.isEmpty() || grants == null) {
        throw new AdmissionException(
            grants == null
                ? "minted_grants: this node keeps no standing grants"
                : "grants_json, minted_grants: give exactly one");
      }
      StandingGrants.Resolved m = grants.use(req.getMintedGrants());
      grantsJson = m.grantsJson();
      jcp = new io.sandboxd.attest.Attestation.Jcp(m.policy(), m.child(), List.of());
    }
    return new Submission(
        moduleOf(req),
        grantsJson,
        req.getEntry(),
        req.getEnv(),
        new CommandInput(
            req.getArgsList(),
            req.getStdinSet()
                ? java.util.Optional.of(req.getStdin().toByteArray())
                : java.util.Optional.empty()),
        jcp,
        req.getDetach());
  }

  private byte[] moduleOf(SubmitRequest req) {
    if (!req.getModuleAddress().isEmpty()) {
      if (!req.getModule().isEmpty()) {
        throw new AdmissionException(
            "module, module_address: give exactly one (the bytes or the address of held bytes)",
            null);
      }
      return modules.get(ModuleStore.parseAddress(req.getModuleAddress()));
    }
    modules.checkSize(req.getModule().size());
    return req.getModule().toByteArray();
  }

  @Override
  public void putModule(PutModuleRequest req, StreamObserver<PutModuleReply> out) {
    answer(
        "putModule",
        out,
        () -> {
          ModuleStore.Put p =
              modules.put(
                  req.getModule().toByteArray(), Admission.compileShareOf(Caller.current()));
          if (!p.alreadyHeld()) {
            LOG.info(() -> "module b3:" + p.address() + " stored (" + p.bytes() + " bytes)");
          }
          return PutModuleReply.newBuilder()
              .setAddress(p.address())
              .setBytes(p.bytes())
              .setAlreadyHeld(p.alreadyHeld())
              .build();
        });
  }

  @Override
  public void listModules(ListModulesRequest req, StreamObserver<ListModulesReply> out) {
    answer(
        "listModules",
        out,
        () -> {
          FactoryCache factories = modules.compiler().factories();
          ListModulesReply.Builder b = ListModulesReply.newBuilder();
          for (ModuleStore.Held h : modules.list()) {
            b.addModules(
                ModuleInfo.newBuilder()
                    .setAddress(h.address())
                    .setBytes(h.bytes())
                    .setStoredMs(h.storedMs())
                    .setCompiled(factories.contains(h.address())));
          }
          FactoryCache.Stats s = factories.stats();
          return b.setFactoryCacheHits(s.hits())
              .setFactoryCacheMisses(s.misses())
              .setFactoryCacheEntries(s.entries())
              .setFactoryCacheCapacity(s.capacity())
              .build();
        });
  }

  @Override
  public void submit(SubmitRequest req, StreamObserver<SubmitReply> out) {
    answer(
        "submit",
        out,
        () -> {
          if (req.getDetach()) {
            return submitDetached(req);
          }
          RunRecord r;
          try {
            if (ops != null) {
              ops.serving().enter();
            }
            try {
              r = supervisor.submit(Caller.current(), submission(req));
            } finally {
              if (ops != null) {
                ops.serving().exit();
              }
            }
          } catch (RuntimeException e) {
            if (ops != null) {
              ops.metrics().refused(ErrorStatus.of(e).getCode().name());
            }
            throw e;
          }
          if (ops != null) {
            ops.metrics().recordRun(r);
          }
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
        });
  }

  @Override
  public void getRun(GetRunRequest req, StreamObserver<RunInfo> out) {
    answer(
        "getRun",
        out,
        () -> {
          if (durable != null) {
            var d = durable.table().run(req.getRunId());
            if (d.isPresent()) {
              return durableInfo(d.get());
            }
          }
          RunSummary run =
              store.run(req.getRunId()).orElseThrow(() -> new RunNotFoundException(req.getRunId()));
          RunInfo.Builder info = withSubmitter(info(run), run).toBuilder();
          if (run.tampered().isEmpty()) {
            store.claim(req.getRunId()).ifPresent(c -> info.setClaim(c.toJsonLine()).setWarm(true));
            for (Envelope a : store.records(req.getRunId(), RecordKind.ATTESTATION)) {
              com.fasterxml.jackson.databind.JsonNode m = a.core().get("manifest");
              if (m != null && m.isTextual()) {
                info.setManifest(m.textValue());
              }
            }
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
          int limit = RequestFields.count("limit", req.getLimit(), DEFAULT_LIST, MAX_LIST);
          java.util.List<RunInfo> runs = new java.util.ArrayList<>();
          for (RunSummary s : store.list(limit)) {
            runs.add(withSubmitter(info(s), s).toBuilder().setState(stateOf(s)).build());
          }
          if (durable != null) {
            durable.table().list(limit).forEach(d -> runs.add(durableInfo(d)));
            runs.sort(
                java.util.Comparator.comparingLong(RunInfo::getStartedMs)
                    .thenComparing(RunInfo::getRunId)
                    .reversed());
          }
          return ListRunsReply.newBuilder()
              .addAllRuns(runs.subList(0, Math.min(limit, runs.size())))
              .build();
        });
  }

  @Override
  public void getRecords(GetRecordsRequest req, StreamObserver<RecordsReply> out) {
    answer(
        "getRecords",
        out,
        () -> {
          java.util.Optional<io.sandboxd.daemon.store.DurableRunTable.Run> durableRun =
              durable == null ? java.util.Optional.empty() : durable.table().run(req.getRunId());
          if (durableRun.isPresent()) {
            RecordsReply r = durableRecords(req.getRunId());
            return req.getWithGrants()
                ? r.toBuilder().setGrantsJson(durableRun.get().grantsJson()).build()
                : r;
          }
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
          store.claim(req.getRunId()).ifPresent(c -> b.addClaims(c.toJsonLine()));
          if (standing != null) {
            // A run under a minted grant: the policy and child its attestation names.
            for (Envelope e : store.records(req.getRunId(), RecordKind.ATTESTATION)) {
              var jcp = io.sandboxd.attest.Attestation.fromCore(e.core()).jcp();
              if (jcp != null && jcp.policy() != null) {
                standing.table().record(jcp.policy()).ifPresent(x -> b.addJcp(x.toJsonLine()));
                standing.table().record(jcp.child()).ifPresent(x -> b.addJcp(x.toJsonLine()));
              }
            }
          }
          if (req.getWithGrants()) {
            store.submission(req.getRunId()).ifPresent(x -> b.setGrantsJson(x.grantsJson()));
          }
          return b.build();
        });
  }

  @Override
  public void listPools(ListPoolsRequest req, StreamObserver<ListPoolsReply> out) {
    answer(
        "listPools",
        out,
        () -> {
          ListPoolsReply.Builder b = ListPoolsReply.newBuilder();
          if (pools != null) {
            for (PoolStats p : pools.stats()) {
              PoolInfo.Builder info =
                  PoolInfo.newBuilder()
                      .setModule(p.key().module())
                      .setManifest(p.key().manifest().orElse(""))
                      .setTier(p.key().tier())
                      .setIdle(p.idle())
                      .setClaims(p.claims())
                      .setHits(p.hits())
                      .setMisses(p.misses())
                      .setIdleUj(p.idleUj())
                      .setConfigured(p.configured())
                      .setNotPoolable(p.notPoolable());
              p.evictions().entrySet().stream()
                  .sorted(java.util.Map.Entry.comparingByKey())
                  .forEach(
                      e ->
                          info.addEvictions(
                              PoolEvictions.newBuilder()
                                  .setReason(e.getKey().name())
                                  .setCount(e.getValue())));
              b.addPools(info);
            }
            b.setIdleBytes(pools.idleBytes())
                .setMaxIdleBytes(pools.maxIdleBytes())
                .setIdlePower(pools.idlePowerLine());
          }
          int n = RequestFields.count("evictions", req.getEvictions(), 0, MAX_LIST);
          if (n > 0) {
            for (Envelope e : store.evictions(n)) {
              b.addEvictions(e.toJsonLine());
            }
          }
          return b.build();
        });
  }

  @Override
  public void listEnvironments(
      io.sandboxd.daemon.rpc.ListEnvironmentsRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.ListEnvironmentsReply> out) {
    answer(
        "listEnvironments",
        out,
        () -> {
          var b = io.sandboxd.daemon.rpc.ListEnvironmentsReply.newBuilder();
          for (OfferedEnvironments.Offer o : supervisor.environments().list()) {
            b.addEnvironments(
                io.sandboxd.daemon.rpc.EnvironmentInfo.newBuilder()
                    .setName(o.name())
                    .setAddress(o.address())
                    .setPinned(o.manifest().pinned())
                    .setManifest(o.manifest().toJsonLine()));
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
        });
  }

  @Override
  public void exportIntoto(
      io.sandboxd.daemon.rpc.ExportIntotoRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.ExportIntotoReply> out) {
    answer(
        "exportIntoto",
        out,
        () ->
            new IntotoExport(store, modules, supervisor.signingKey())
                .durable(durable)
                .export(req.getRunId(), req.getModule().toByteArray()));
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
  static <T> void answer(String call, StreamObserver<T> out, Supplier<T> body) {
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

  /** The run's submitter uid added, where the store has it (never for a tampered run). */
  private RunInfo withSubmitter(RunInfo info, RunSummary s) {
    if (s.tampered().isPresent()) {
      return info;
    }
    var uid = store.submitter(s.runId());
    return uid.isPresent() ? info.toBuilder().setSubmitterUid((int) uid.getAsLong()).build() : info;
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

  // ================================================================ durable runs (issue 12)

  private DurableRuns durableRuns() {
    if (durable == null) {
      throw new IllegalStateException("this service was built without durable runs");
    }
    return durable;
  }

  private SubmitReply submitDetached(SubmitRequest req) {
    if (ops != null) {
      ops.serving().enter();
    }
    try {
      String runId = durableRuns().start(Caller.current(), submission(req));
      ownedBy(runId, Caller.current());
      LOG.info(() -> "durable run " + runId + " started (detached)");
      return SubmitReply.newBuilder().setRunId(runId).build();
    } finally {
      if (ops != null) {
        ops.serving().exit();
      }
    }
  }

  /** The state of a single-step run, read from its outcome. */
  private static String stateOf(RunSummary s) {
    if (s.tampered().isPresent()) {
      return "tampered";
    }
    String o = s.outcomeJson();
    if (o.equals("\"Completed\"")) {
      return "completed";
    }
    return o.startsWith("{\"Terminated\"") ? "terminated" : "failed";
  }

  private RunInfo durableInfo(io.sandboxd.daemon.store.DurableRunTable.Run d) {
    var segs = durable.table().segments(d.runId());
    StringBuilder log = new StringBuilder();
    segs.forEach(x -> log.append(x.log()));
    return RunInfo.newBuilder()
        .setRunId(d.runId())
        .setUnit(d.unit())
        .setGrantsId(d.grantsId())
        .setOutcomeJson(d.outcomeJson())
        .setStartedMs(d.createdMs())
        .setSegments(segs.size())
        .setHead(segs.isEmpty() ? "" : segs.get(segs.size() - 1).envelope().address())
        .setLog(log.toString())
        .setManifest(d.env())
        .setState(d.state().name())
        .build();
  }

  private RecordsReply durableRecords(String runId) {
    RecordsReply.Builder b = RecordsReply.newBuilder();
    durable.table().segments(runId).forEach(x -> b.addSegments(x.envelope().toJsonLine()));
    var segs = durable.table().segments(runId);
    if (standing != null && !segs.isEmpty()) {
      String start =
          io.sandboxd.attest.RunSegment.fromCore(segs.get(0).envelope().core()).grantsId();
      standing.runRecords(runId, start).forEach(e -> b.addJcp(e.toJsonLine()));
    }
    for (Envelope e : durable.table().records(runId)) {
      if (e.schema().orElse("").equals(io.sandboxd.attest.Receipt.SCHEMA)) {
        b.addReceipts(e.toJsonLine());
      } else {
        b.addAttestations(e.toJsonLine());
      }
    }
    return b.build();
  }

  private io.sandboxd.daemon.rpc.DurableRunReply durableReply(
      io.sandboxd.daemon.store.DurableRunTable.Run d, String segment) {
    var segs = durable.table().segments(d.runId());
    return io.sandboxd.daemon.rpc.DurableRunReply.newBuilder()
        .setRunId(d.runId())
        .setState(d.state().name())
        .setOutcomeJson(d.outcomeJson())
        .setSegments(segs.size())
        .setHead(segs.isEmpty() ? "" : segs.get(segs.size() - 1).envelope().address())
        .setSegment(segment)
        .build();
  }

  /** How long a suspend or wait may hold its call when the client names no timeout. */
  static final long DEFAULT_WAIT_MS = 60_000;

  static final long MAX_WAIT_MS = 600_000;

  @Override
  public void suspendRun(
      io.sandboxd.daemon.rpc.DurableRunRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.DurableRunReply> out) {
    String runId = req.getRunId();
    try {
      durableRuns().requestPark(runId);
    } catch (RuntimeException e) {
      answer(
          "suspendRun",
          out,
          () -> {
            throw e;
          });
      return;
    }
    // Held without a thread until the run has parked (or ended), the timeout passes or the client
    // goes, as a WaitRun is.
    waiters()
        .await(runId, DEFAULT_WAIT_MS, out, () -> DurableRuns.noBoundary(runId, DEFAULT_WAIT_MS));
  }

  @Override
  public void resumeRun(
      io.sandboxd.daemon.rpc.ResumeRunRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.DurableRunReply> out) {
    answer(
        "resumeRun",
        out,
        () -> {
          Envelope seg =
              durableRuns()
                  .resume(Caller.current(), req.getRunId(), req.getEnv(), req.getGrantsJson());
          return durableReply(durable.require(req.getRunId()), seg.toJsonLine());
        });
  }

  @Override
  public void exportRun(
      io.sandboxd.daemon.rpc.DurableRunRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.ExportRunReply> out) {
    byte[] bundle;
    try {
      bundle = durableRuns().export(req.getRunId(), req.getDestinationKey());
    } catch (RuntimeException e) {
      answer(
          "exportRun",
          out,
          () -> {
            throw e;
          });
      return;
    }
    // Streamed (issue 23): the run stays here, exporting, until the client confirms the bundle.
    BundleStreams.export(req.getRunId(), bundle, out, handoff());
  }

  @Override
  public void confirmExport(
      io.sandboxd.daemon.rpc.ConfirmExportRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.DurableRunReply> out) {
    answer(
        "confirmExport",
        out,
        () -> durableReply(handoff().confirm(req.getRunId(), req.getDigest()), ""));
  }

  @Override
  public void reclaimRun(
      io.sandboxd.daemon.rpc.DurableRunRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.DurableRunReply> out) {
    answer("reclaimRun", out, () -> durableReply(handoff().reclaim(req.getRunId()), ""));
  }

  private ExportHandoff handoff;

  private synchronized ExportHandoff handoff() {
    if (handoff == null) {
      handoff = new ExportHandoff(durableRuns().table(), durableRuns()::sweepSnapshots);
    }
    return handoff;
  }

  @Override
  public void importRun(
      io.sandboxd.daemon.rpc.ImportRunRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.DurableRunReply> out) {
    answer("importRun", out, () -> imported(req.getBundle().toByteArray(), Caller.current()));
  }

  @Override
  public StreamObserver<io.sandboxd.daemon.rpc.ImportRunRequest> importRunStream(
      StreamObserver<io.sandboxd.daemon.rpc.DurableRunReply> out) {
    Caller caller = Caller.current();
    return BundleStreams.importing(out, bytes -> imported(bytes, caller));
  }

  private io.sandboxd.daemon.rpc.DurableRunReply imported(byte[] bundle, Caller caller) {
    io.sandboxd.daemon.store.DurableRunTable.Run run = durableRuns().importBundle(bundle);
    ownedBy(run.runId(), caller);
    return durableReply(run, "");
  }

  /** Records the caller as the owner of a durable run it started or imported (issue 23). */
  private void ownedBy(String runId, Caller caller) {
    if (caller.known()) {
      store.owners().setDurable(runId, caller.uid());
    }
  }

  @Override
  public void waitRun(
      io.sandboxd.daemon.rpc.WaitRunRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.DurableRunReply> out) {
    io.sandboxd.daemon.store.DurableRunTable.Run now;
    long timeout;
    try {
      long asked = RequestFields.upTo("timeout_ms", req.getTimeoutMs(), MAX_WAIT_MS);
      timeout = asked == 0 ? DEFAULT_WAIT_MS : asked;
      now = durableRuns().require(req.getRunId());
    } catch (RuntimeException e) {
      answer(
          "waitRun",
          out,
          () -> {
            throw e;
          });
      return;
    }
    if (now.state() != io.sandboxd.daemon.store.DurableRunTable.State.running) {
      answer("waitRun", out, () -> durableReply(now, ""));
      return;
    }
    // Held without a thread until the run stops running, the timeout passes or the client goes.
    waiters().await(req.getRunId(), timeout, out);
  }

  private RunWaiters runWaiters;

  private synchronized RunWaiters waiters() {
    if (runWaiters == null) {
      runWaiters = new RunWaiters(durableRuns()::require, r -> durableReply(r, ""));
    }
    return runWaiters;
  }

  @Override
  public void getRunLog(
      io.sandboxd.daemon.rpc.DurableRunRequest req,
      StreamObserver<io.sandboxd.daemon.rpc.RunLogReply> out) {
    answer(
        "getRunLog",
        out,
        () ->
            io.sandboxd.daemon.rpc.RunLogReply.newBuilder()
                .setLog(durableRuns().log(req.getRunId()))
                .build());
  }
}
