package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Set;

/**
 * A run's checkpoint ({@code jcp.checkpoint/1}, WIRE.md §2.11), signed by the agent key: the run's
 * state address and the grants in force at that point, hash-chained per run.
 */
public record JcpCheckpoint(
    String runId, long seq, String prev, String state, String grantsId, String agent) {

  public static final String SCHEMA = "jcp.checkpoint/1";

  private static final Set<String> FIELDS =
      Set.of("schema", "run_id", "seq", "prev", "state", "grants_id", "agent");

  public JcpCheckpoint {
    if (runId.isEmpty()) {
      throw new AttestException("checkpoint.run_id: must not be empty");
    }
    if ((seq == 0) != (prev == null)) {
      throw new AttestException("checkpoint.prev: must be null exactly at seq 0");
    }
  }

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.core(SCHEMA);
    o.put("run_id", runId);
    o.put("seq", seq);
    o.put("prev", prev); // null at seq 0, written as JSON null
    o.put("state", state);
    o.put("grants_id", grantsId);
    o.put("agent", agent);
    return o;
  }

  /** Parses a checkpoint core strictly. */
  public static JcpCheckpoint fromCore(JsonNode core) {
    JsonReader r = JsonReader.of(core, "checkpoint", FIELDS, JsonReader.RECORD).schema(SCHEMA);
    return new JcpCheckpoint(
        r.string("run_id"),
        r.u64("seq"),
        r.nullableHex32("prev"),
        r.hex32("state"),
        r.hex32("grants_id"),
        JcpMintPolicy.key(r, "agent"));
  }
}
