package io.sandboxd.daemon.rpc;

import com.google.protobuf.ByteString;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.durable.DurableRuns;
import io.sandboxd.daemon.durable.IntotoExport;
import io.sandboxd.daemon.jcp.StandingGrants;
import io.sandboxd.daemon.run.OutputUnavailableException;
import io.sandboxd.daemon.run.RunNotFoundException;
import io.sandboxd.daemon.store.DurableRunTable;
import io.sandboxd.daemon.store.RecordKind;
import io.sandboxd.daemon.store.RunIo;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.executor.ModuleStore;
import java.util.Optional;

/**
 * What a run left behind: its signed records, its in-toto export and its output bytes. {@code
 * durable} is null for a service built without durable runs (tests); {@code standing}, whose JCP
 * records a run under a minted grant names, is null where the node keeps no standing grants.
 */
record RecordCalls(
    RunStore store,
    DurableRuns durable,
    StandingGrants standing,
    ModuleStore modules,
    SigningKey key) {

  RecordsReply records(GetRecordsRequest req) {
    Optional<DurableRunTable.Run> durableRun =
        durable == null ? Optional.empty() : durable.table().run(req.getRunId());
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
        var jcp = Attestation.fromCore(e.core()).jcp();
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
  }

  ExportIntotoReply intoto(ExportIntotoRequest req) {
    return new IntotoExport(store, modules, key)
        .durable(durable)
        .export(req.getRunId(), req.getModule().toByteArray());
  }

  GetOutputReply output(GetOutputRequest req) {
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
  }

  private RecordsReply durableRecords(String runId) {
    RecordsReply.Builder b = RecordsReply.newBuilder();
    durable.table().segments(runId).forEach(x -> b.addSegments(x.envelope().toJsonLine()));
    var segs = durable.table().segments(runId);
    if (standing != null && !segs.isEmpty()) {
      String start = RunSegment.fromCore(segs.get(0).envelope().core()).grantsId();
      standing.runRecords(runId, start).forEach(e -> b.addJcp(e.toJsonLine()));
    }
    for (Envelope e : durable.table().records(runId)) {
      if (e.schema().orElse("").equals(Receipt.SCHEMA)) {
        b.addReceipts(e.toJsonLine());
      } else {
        b.addAttestations(e.toJsonLine());
      }
    }
    return b.build();
  }
}
