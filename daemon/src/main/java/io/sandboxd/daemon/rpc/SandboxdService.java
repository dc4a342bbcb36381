package io.sandboxd.daemon.rpc;

import io.grpc.stub.StreamObserver;
import io.sandboxd.daemon.DaemonMetrics;
import io.sandboxd.daemon.ServingState;
import io.sandboxd.daemon.durable.DurableRuns;
import io.sandboxd.daemon.fleet.FleetRecords;
import io.sandboxd.daemon.jcp.StandingGrants;
import io.sandboxd.daemon.run.RunSupervisor;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.executor.ModuleStore;
import io.sandboxd.warmpool.WarmPools;
import java.util.function.Supplier;

/**
 * The gRPC face of the daemon: the one service the proto defines, each call answered through {@link
 * Answer} by the class of its area (runs, run info, records, durable runs, modules, pools, status,
 * fleet). Bad input becomes INVALID_ARGUMENT naming the field; a store that cannot write becomes
 * UNAVAILABLE; nothing a client sends can take the daemon down.
 */
public final class SandboxdService extends SandboxdGrpc.SandboxdImplBase {
  // Status, drain and metrics.
  private final Operations ops;

  // The areas, each built from the collaborators it uses.
  private final FleetCalls fleet;
  private final ModuleCalls moduleCalls;
  private final PoolCalls poolCalls;
  private final RunCalls runs;
  private final RunInfoCalls runInfo;
  private final RecordCalls records;
  private final DurableCalls durableCalls;

  /** What the operator-facing calls and the admission gate need (status, drain, metrics). */
  public record Operations(ServingState serving, DaemonMetrics metrics, NodeStatus status) {
    /** Runs {@code body} as one admitted submission (none while draining). */
    <T> T admitted(Supplier<T> body) {
      serving.enter();
      try {
        return body.get();
      } finally {
        serving.exit();
      }
    }
  }

  /**
   * The service over the node's collaborators: {@code pools} null when it keeps no warm pools,
   * {@code standing} null when no minted child grant may be named (SubmitRequest.minted_grants),
   * {@code durable} null for a service without durable runs (issue 12).
   */
  public SandboxdService(
      RunSupervisor supervisor,
      RunStore store,
      ModuleStore modules,
      WarmPools pools,
      StandingGrants standing,
      DurableRuns durable,
      Operations ops) {
    this.ops = java.util.Objects.requireNonNull(ops, "ops");
    SubmitRequests requests = new SubmitRequests(modules, standing);
    fleet = new FleetCalls(store, new FleetRecords(store));
    moduleCalls = new ModuleCalls(modules, supervisor.environments());
    poolCalls = new PoolCalls(pools, store);
    runs = new RunCalls(supervisor, requests, ops);
    runInfo = new RunInfoCalls(store, durable);
    records = new RecordCalls(store, durable, standing, modules, supervisor.signingKey());
    durableCalls = new DurableCalls(durable, store.owners(), requests, ops);
  }

  // ---- runs ----

  @Override
  public void submit(SubmitRequest req, StreamObserver<SubmitReply> out) {
    Answer.reply("submit", out, () -> req.getDetach() ? durableCalls.start(req) : runs.submit(req));
  }

  @Override
  public void replay(ReplayRequest req, StreamObserver<ReplayReply> out) {
    Answer.reply("replay", out, () -> runs.replay(req));
  }

  @Override
  public void getRun(GetRunRequest req, StreamObserver<RunInfo> out) {
    Answer.reply("getRun", out, () -> runInfo.run(req));
  }

  @Override
  public void listRuns(ListRunsRequest req, StreamObserver<ListRunsReply> out) {
    Answer.reply("listRuns", out, () -> runInfo.list(req));
  }

  @Override
  public void getRecords(GetRecordsRequest req, StreamObserver<RecordsReply> out) {
    Answer.reply("getRecords", out, () -> records.records(req));
  }

  @Override
  public void getOutput(GetOutputRequest req, StreamObserver<GetOutputReply> out) {
    Answer.reply("getOutput", out, () -> records.output(req));
  }

  @Override
  public void exportIntoto(ExportIntotoRequest req, StreamObserver<ExportIntotoReply> out) {
    Answer.reply("exportIntoto", out, () -> records.intoto(req));
  }

  // ---- durable runs ----

  @Override
  public void suspendRun(DurableRunRequest req, StreamObserver<DurableRunReply> out) {
    durableCalls.suspend(req, out);
  }

  @Override
  public void resumeRun(ResumeRunRequest req, StreamObserver<DurableRunReply> out) {
    Answer.reply("resumeRun", out, () -> durableCalls.resume(req));
  }

  @Override
  public void waitRun(WaitRunRequest req, StreamObserver<DurableRunReply> out) {
    durableCalls.await(req, out);
  }

  @Override
  public void getRunLog(DurableRunRequest req, StreamObserver<RunLogReply> out) {
    Answer.reply("getRunLog", out, () -> durableCalls.log(req));
  }

  @Override
  public void exportRun(DurableRunRequest req, StreamObserver<ExportRunReply> out) {
    durableCalls.export(req, out);
  }

  @Override
  public void confirmExport(ConfirmExportRequest req, StreamObserver<DurableRunReply> out) {
    Answer.reply("confirmExport", out, () -> durableCalls.confirm(req));
  }

  @Override
  public void reclaimRun(DurableRunRequest req, StreamObserver<DurableRunReply> out) {
    Answer.reply("reclaimRun", out, () -> durableCalls.reclaim(req));
  }

  @Override
  public void importRun(ImportRunRequest req, StreamObserver<DurableRunReply> out) {
    Answer.reply("importRun", out, () -> durableCalls.importRun(req));
  }

  @Override
  public StreamObserver<ImportRunRequest> importRunStream(StreamObserver<DurableRunReply> out) {
    return durableCalls.importStream(out);
  }

  // ---- modules, environments and pools ----

  @Override
  public void putModule(PutModuleRequest req, StreamObserver<PutModuleReply> out) {
    Answer.reply("putModule", out, () -> moduleCalls.put(req));
  }

  @Override
  public void listModules(ListModulesRequest req, StreamObserver<ListModulesReply> out) {
    Answer.reply("listModules", out, moduleCalls::list);
  }

  @Override
  public void listEnvironments(
      ListEnvironmentsRequest req, StreamObserver<ListEnvironmentsReply> out) {
    Answer.reply("listEnvironments", out, moduleCalls::environments);
  }

  @Override
  public void listPools(ListPoolsRequest req, StreamObserver<ListPoolsReply> out) {
    Answer.reply("listPools", out, () -> poolCalls.list(req));
  }

  // ---- status and store ----

  @Override
  public void getStatus(GetStatusRequest req, StreamObserver<StatusReply> out) {
    Answer.reply("getStatus", out, ops.status()::status);
  }

  @Override
  public void verifyStore(VerifyStoreRequest req, StreamObserver<VerifyStoreReply> out) {
    Answer.reply("verifyStore", out, ops.status()::verifyStore);
  }

  // ---- node log and fleet records (issue 14) ----

  @Override
  public void getLogCheckpoint(
      GetLogCheckpointRequest req, StreamObserver<LogCheckpointReply> out) {
    Answer.reply("getLogCheckpoint", out, fleet::checkpoint);
  }

  @Override
  public void proveInclusion(ProveInclusionRequest req, StreamObserver<LogProofReply> out) {
    Answer.reply("proveInclusion", out, () -> fleet.inclusion(req));
  }

  @Override
  public void proveConsistency(ProveConsistencyRequest req, StreamObserver<LogProofReply> out) {
    Answer.reply("proveConsistency", out, () -> fleet.consistency(req));
  }

  @Override
  public void aggregateFleet(AggregateFleetRequest req, StreamObserver<AggregateFleetReply> out) {
    Answer.reply("aggregateFleet", out, () -> fleet.aggregate(req));
  }

  @Override
  public void proveFleet(ProveFleetRequest req, StreamObserver<LogProofReply> out) {
    Answer.reply("proveFleet", out, () -> fleet.prove(req));
  }
}
