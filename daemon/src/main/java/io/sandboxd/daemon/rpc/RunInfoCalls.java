package io.sandboxd.daemon.rpc;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.daemon.durable.DurableRuns;
import io.sandboxd.daemon.run.RunNotFoundException;
import io.sandboxd.daemon.store.DurableRunTable;
import io.sandboxd.daemon.store.RecordKind;
import io.sandboxd.daemon.store.RunIo;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.daemon.store.RunSummary;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * What the node says about its runs, single-step and durable alike: one run, or the newest ({@code
 * durable} null for a service built without durable runs: tests).
 */
record RunInfoCalls(RunStore store, DurableRuns durable) {
  private static final int DEFAULT_LIST = 100;

  RunInfo run(GetRunRequest req) {
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
        JsonNode m = a.core().get("manifest");
        if (m != null && m.isTextual()) {
          info.setManifest(m.textValue());
        }
      }
      store
          .io(req.getRunId())
          .ifPresent(
              io ->
                  info.setIoJson(ioJson(io)).setExitStatus(io.exitStatus()).setExited(io.exited()));
    }
    store
        .pruned(req.getRunId())
        .ifPresent(
            p ->
                info.setPruned(
                    "journal, blobs, log and module bytes pruned at "
                        + Instant.ofEpochMilli(p.prunedMs())
                        + " by "
                        + p.reason()
                        + " (signed records kept)"));
    return info.build();
  }

  ListRunsReply list(ListRunsRequest req) {
    int limit = RequestFields.count("limit", req.getLimit(), DEFAULT_LIST, RequestFields.MAX_ROWS);
    List<RunInfo> runs = new ArrayList<>();
    for (RunSummary s : store.list(limit)) {
      runs.add(withSubmitter(info(s), s).toBuilder().setState(stateOf(s)).build());
    }
    if (durable != null) {
      durable.table().list(limit).forEach(d -> runs.add(durableInfo(d)));
      runs.sort(
          Comparator.comparingLong(RunInfo::getStartedMs)
              .thenComparing(RunInfo::getRunId)
              .reversed());
    }
    return ListRunsReply.newBuilder()
        .addAllRuns(runs.subList(0, Math.min(limit, runs.size())))
        .build();
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
      var reason = CanonicalJson.mapper().createObjectNode();
      reason.putObject("Tampered").put("reason", s.tampered().get());
      return RunInfo.newBuilder()
          .setRunId(s.runId())
          .setOutcomeJson(CanonicalJson.canonicalString(reason))
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

  private RunInfo durableInfo(DurableRunTable.Run d) {
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
}
