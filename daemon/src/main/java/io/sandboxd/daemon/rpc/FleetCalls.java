package io.sandboxd.daemon.rpc;

import io.sandboxd.attest.LogCheckpoint;
import io.sandboxd.attest.NoteVerifier;
import io.sandboxd.daemon.fleet.FleetRecords;
import io.sandboxd.daemon.store.RunStore;

/** The node log's checkpoints and proofs, and the fleet aggregates over its receipts (issue 14). */
record FleetCalls(RunStore store, FleetRecords fleet) {

  LogCheckpointReply checkpoint() {
    RunStore.LogNote n = fleet.checkpoint();
    NoteVerifier v = LogCheckpoint.verifier(store.logOrigin(), store.publicKey());
    return LogCheckpointReply.newBuilder()
        .setNote(n.note())
        .setTreeSize(n.treeSize())
        .setOrigin(v.name())
        .setPublicKey(store.publicKey().hex())
        .setVkey(v.vkey())
        .build();
  }

  LogProofReply inclusion(ProveInclusionRequest req) {
    return proof(fleet.proveInclusion(req.getAddress()));
  }

  LogProofReply consistency(ProveConsistencyRequest req) {
    return proof(
        fleet.proveConsistency(
            RequestFields.upTo("old_size", req.getOldSize(), Long.MAX_VALUE),
            RequestFields.upTo("new_size", req.getNewSize(), Long.MAX_VALUE)));
  }

  AggregateFleetReply aggregate(AggregateFleetRequest req) {
    return AggregateFleetReply.newBuilder()
        .setEnvelopeJson(
            fleet
                .aggregate(
                    RequestFields.upTo("since_ms", req.getSinceMs(), Long.MAX_VALUE),
                    RequestFields.upTo("until_ms", req.getUntilMs(), Long.MAX_VALUE))
                .toJsonLine())
        .build();
  }

  LogProofReply prove(ProveFleetRequest req) {
    return proof(fleet.prove(req.getRunId(), req.getAggregateJson(), req.getOldAggregateJson()));
  }

  private static LogProofReply proof(String json) {
    return LogProofReply.newBuilder().setProofJson(json).build();
  }
}
