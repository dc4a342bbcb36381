package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.rpc.RecordsReply;
import io.sandboxd.daemon.rpc.RunInfo;
import java.util.List;

/** `runs show --json`: a run's columns and its signed envelopes as one JSON object. */
final class RunJson {
  private RunJson() {}

  static String of(RunInfo r, RecordsReply rec) {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("run_id", r.getRunId());
    o.put("unit", r.getUnit());
    o.put("grants_id", r.getGrantsId());
    o.set("outcome", parse(r.getOutcomeJson()));
    o.put("started_ms", r.getStartedMs());
    o.put("segments", r.getSegments());
    o.put("head", r.getHead());
    o.put("warm", r.getWarm());
    o.set("claim", r.getClaim().isEmpty() ? o.nullNode() : parse(r.getClaim()));
    o.put("pruned", r.getPruned());
    o.put("log", r.getLog());
    ObjectNode records = o.putObject("records");
    records.set("segments", array(rec.getSegmentsList()));
    records.set("receipts", array(rec.getReceiptsList()));
    records.set("attestations", array(rec.getAttestationsList()));
    records.set("claims", array(rec.getClaimsList()));
    return o.toString();
  }

  private static ArrayNode array(List<String> envelopes) {
    ArrayNode a = CanonicalJson.mapper().createArrayNode();
    envelopes.forEach(e -> a.add(parse(e)));
    return a;
  }

  private static JsonNode parse(String json) {
    return CanonicalJson.parse(json);
  }
}
