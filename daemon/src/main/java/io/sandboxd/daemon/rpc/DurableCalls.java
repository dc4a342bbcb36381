package io.sandboxd.daemon.rpc;

import io.grpc.stub.StreamObserver;
import io.sandboxd.attest.Envelope;
import io.sandboxd.daemon.durable.DurableRuns;
import io.sandboxd.daemon.durable.ExportHandoff;
import io.sandboxd.daemon.run.Caller;
import io.sandboxd.daemon.store.DurableRunTable;
import io.sandboxd.daemon.store.RunOwners;
import java.util.logging.Logger;

/**
 * Durable runs (issue 12): started detached, suspended, resumed, waited on, their log read, and
 * moved between nodes by a confirmed export and an import (issue 23).
 */
final class DurableCalls {
  private static final Logger LOG = Logger.getLogger(DurableCalls.class.getName());

  /** How long a suspend or wait may hold its call when the client names no timeout. */
  static final long DEFAULT_WAIT_MS = 60_000;

  static final long MAX_WAIT_MS = 600_000;

  // Null for a service built without durable runs (tests).
  private final DurableRuns durable;
  private final RunOwners owners;
  private final SubmitRequests requests;
  // Status, drain and metrics.
  private final SandboxdService.Operations ops;

  private ExportHandoff handoff;
  private RunWaiters waiters;

  DurableCalls(
      DurableRuns durable,
      RunOwners owners,
      SubmitRequests requests,
      SandboxdService.Operations ops) {
    this.durable = durable;
    this.owners = owners;
    this.requests = requests;
    this.ops = ops;
  }

  /** A detached submission: a durable run started, its id answered at once. */
  SubmitReply start(SubmitRequest req) {
    return ops.admitted(
        () -> {
          String runId = runs().start(Caller.current(), requests.decode(req));
          ownedBy(runId, Caller.current());
          LOG.info(() -> "durable run " + runId + " started (detached)");
          return SubmitReply.newBuilder().setRunId(runId).build();
        });
  }

  void suspend(DurableRunRequest req, StreamObserver<DurableRunReply> out) {
    String runId = req.getRunId();
    try {
      runs().requestPark(runId);
    } catch (RuntimeException e) {
      Answer.fail("suspendRun", out, e);
      return;
    }
    // Held without a thread until the run has parked (or ended), the timeout passes or the client
    // goes, as a WaitRun is.
    waiters()
        .await(runId, DEFAULT_WAIT_MS, out, () -> DurableRuns.noBoundary(runId, DEFAULT_WAIT_MS));
  }

  DurableRunReply resume(ResumeRunRequest req) {
    Envelope seg =
        runs().resume(Caller.current(), req.getRunId(), req.getEnv(), req.getGrantsJson());
    return reply(durable.require(req.getRunId()), seg.toJsonLine());
  }

  void await(WaitRunRequest req, StreamObserver<DurableRunReply> out) {
    DurableRunTable.Run now;
    long timeout;
    try {
      long asked = RequestFields.upTo("timeout_ms", req.getTimeoutMs(), MAX_WAIT_MS);
      timeout = asked == 0 ? DEFAULT_WAIT_MS : asked;
      now = runs().require(req.getRunId());
    } catch (RuntimeException e) {
      Answer.fail("waitRun", out, e);
      return;
    }
    if (now.state() != DurableRunTable.State.running) {
      Answer.reply("waitRun", out, () -> reply(now, ""));
      return;
    }
    // Held without a thread until the run stops running, the timeout passes or the client goes.
    waiters().await(req.getRunId(), timeout, out);
  }

  RunLogReply log(DurableRunRequest req) {
    return RunLogReply.newBuilder().setLog(runs().log(req.getRunId())).build();
  }

  void export(DurableRunRequest req, StreamObserver<ExportRunReply> out) {
    byte[] bundle;
    try {
      bundle = runs().export(req.getRunId(), req.getDestinationKey());
    } catch (RuntimeException e) {
      Answer.fail("exportRun", out, e);
      return;
    }
    // Streamed (issue 23): the run stays here, exporting, until the client confirms the bundle.
    BundleStreams.export(req.getRunId(), bundle, out, handoff());
  }

  DurableRunReply confirm(ConfirmExportRequest req) {
    return reply(handoff().confirm(req.getRunId(), req.getDigest()), "");
  }

  DurableRunReply reclaim(DurableRunRequest req) {
    return reply(handoff().reclaim(req.getRunId()), "");
  }

  DurableRunReply importRun(ImportRunRequest req) {
    return imported(req.getBundle().toByteArray(), Caller.current());
  }

  StreamObserver<ImportRunRequest> importStream(StreamObserver<DurableRunReply> out) {
    Caller caller = Caller.current();
    return BundleStreams.importing(out, bytes -> imported(bytes, caller));
  }

  private DurableRunReply imported(byte[] bundle, Caller caller) {
    DurableRunTable.Run run = runs().importBundle(bundle);
    ownedBy(run.runId(), caller);
    return reply(run, "");
  }

  /** Records the caller as the owner of a durable run it started or imported (issue 23). */
  private void ownedBy(String runId, Caller caller) {
    if (caller.known()) {
      owners.setDurable(runId, caller.uid());
    }
  }

  private DurableRunReply reply(DurableRunTable.Run d, String segment) {
    var segs = durable.table().segments(d.runId());
    return DurableRunReply.newBuilder()
        .setRunId(d.runId())
        .setState(d.state().name())
        .setOutcomeJson(d.outcomeJson())
        .setSegments(segs.size())
        .setHead(segs.isEmpty() ? "" : segs.get(segs.size() - 1).envelope().address())
        .setSegment(segment)
        .build();
  }

  private DurableRuns runs() {
    if (durable == null) {
      throw new IllegalStateException("this service was built without durable runs");
    }
    return durable;
  }

  private synchronized ExportHandoff handoff() {
    if (handoff == null) {
      handoff = new ExportHandoff(runs().table(), runs()::sweepSnapshots);
    }
    return handoff;
  }

  // Built on first use: its timer thread runs only on a node that holds suspends or waits.
  private synchronized RunWaiters waiters() {
    if (waiters == null) {
      waiters = new RunWaiters(runs()::require, r -> reply(r, ""));
    }
    return waiters;
  }
}
