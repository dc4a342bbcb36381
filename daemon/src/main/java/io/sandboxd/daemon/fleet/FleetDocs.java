package io.sandboxd.daemon.fleet;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.ConsistencyProof;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.FleetAggregate;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.InclusionProof;
import io.sandboxd.attest.JsonReader;
import io.sandboxd.attest.LogCheckpoint;
import io.sandboxd.attest.MerkleHash;
import io.sandboxd.attest.MerkleVerifier;
import io.sandboxd.attest.NoteException;
import io.sandboxd.attest.ProofCheck;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.TreeHead;
import io.sandboxd.attest.Verification;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The proof documents of the node log and of fleet aggregates, as the daemon writes them and as
 * {@code sandboxctl verify} / {@code fleet verify} check them offline. Unusable input throws {@link
 * AttestException}; a proof that does not hold is an {@link Verdict.Invalid}.
 */
public final class FleetDocs {
  public static final String LOG_PROOF = "sandbox.log-proof/1";
  public static final String LOG_CONSISTENCY = "sandbox.log-consistency/1";
  public static final String FLEET_PROOF = "sandbox.fleet-proof/1";
  public static final String FLEET_CONSISTENCY = "sandbox.fleet-consistency/1";

  private static final MerkleVerifier VERIFIER = MerkleVerifier.blake3();

  private FleetDocs() {}

  /** The outcome of an offline check. */
  public sealed interface Verdict {
    /** It holds; {@code what} says what was shown. */
    record Valid(String what) implements Verdict {}

    /** It does not hold, and why. */
    record Invalid(String why) implements Verdict {}
  }

  /** Whether {@code doc} is one of these proof documents (by its schema). */
  public static boolean isProof(JsonNode doc) {
    return doc.isObject()
        && doc.path("schema").isTextual()
        && Set.of(LOG_PROOF, LOG_CONSISTENCY, FLEET_PROOF, FLEET_CONSISTENCY)
            .contains(doc.get("schema").textValue());
  }

  public static ObjectNode logProof(
      String note, String address, String kind, InclusionProof proof) {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("schema", LOG_PROOF);
    o.put("checkpoint", note);
    o.put("address", address);
    o.put("kind", kind);
    o.set("proof", proof.toJson());
    return o;
  }

  public static ObjectNode logConsistency(String oldNote, String newNote, ConsistencyProof proof) {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("schema", LOG_CONSISTENCY);
    o.put("old", oldNote);
    o.put("new", newNote);
    o.set("proof", proof.toJson());
    return o;
  }

  /**
   * One receipt of a run and its inclusion proof in an aggregate: in its main tree, or ({@code
   * durable}) in its durable part's tree.
   */
  public record ReceiptProof(String receipt, InclusionProof proof, boolean durable) {
    public ReceiptProof(String receipt, InclusionProof proof) {
      this(receipt, proof, false);
    }
  }

  /** The {@code tree} an entry names when its proof is in the aggregate's durable part. */
  public static final String DURABLE_TREE = "durable";

  public static ObjectNode fleetProof(String aggregate, String runId, List<ReceiptProof> proofs) {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("schema", FLEET_PROOF);
    o.put("aggregate", aggregate);
    o.put("run_id", runId);
    ArrayNode a = o.putArray("receipts");
    for (ReceiptProof p : proofs) {
      ObjectNode e = a.addObject().put("receipt", p.receipt());
      if (p.durable()) {
        // Absent for the main tree, so a proof of single-step runs is the earlier form.
        e.put("tree", DURABLE_TREE);
      }
      e.set("proof", p.proof().toJson());
    }
    return o;
  }

  public static ObjectNode fleetConsistency(
      String oldAddr, String newAddr, ConsistencyProof proof) {
    return fleetConsistency(oldAddr, newAddr, proof, Optional.empty());
  }

  /** As above, with the durable parts' consistency proof when the older aggregate has one. */
  public static ObjectNode fleetConsistency(
      String oldAddr, String newAddr, ConsistencyProof proof, Optional<ConsistencyProof> durable) {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("schema", FLEET_CONSISTENCY);
    o.put("old", oldAddr);
    o.put("new", newAddr);
    o.set("proof", proof.toJson());
    durable.ifPresent(d -> o.set("durable_proof", d.toJson()));
    return o;
  }

  /**
   * Checks a checkpoint note signed by {@code key} (the log's name taken from its origin line). A
   * malformed note throws (unusable); an unknown key or bad signature is Invalid.
   */
  public static Verdict verifyCheckpoint(String note, PublicKey key) {
    Checked cp = checkpoint(note, key, "checkpoint");
    if (cp.failure() != null) {
      return new Verdict.Invalid(cp.failure());
    }
    return new Verdict.Valid("checkpoint of " + cp.origin() + " at size " + cp.cp().treeSize());
  }

  /** A checkpoint that verified, or why it did not. */
  private record Checked(LogCheckpoint cp, String failure) {
    String origin() {
      return cp.origin();
    }
  }

  private static Checked checkpoint(String note, PublicKey key, String field) {
    try {
      return new Checked(LogCheckpoint.verify(note, key, Optional.empty()), null);
    } catch (NoteException e) {
      if (e.reason() == NoteException.Reason.MALFORMED) {
        throw new AttestException(field + ": " + e.getMessage(), e);
      }
      return new Checked(null, field + ": " + e.reason() + ": " + e.getMessage());
    }
  }

  /** Checks a node-log inclusion or consistency document against the node's {@code key}. */
  public static Verdict verifyLog(JsonNode doc, PublicKey key) {
    String schema = doc.path("schema").asText();
    if (schema.equals(LOG_PROOF)) {
      JsonReader r =
          JsonReader.of(doc, "log-proof", JsonReader.RECORD)
              .only(Set.of("schema", "checkpoint", "address", "kind", "proof"));
      String address = r.hex32("address");
      InclusionProof proof = InclusionProof.fromJson(r.required("proof"));
      r.string("kind");
      Checked checked = checkpoint(r.string("checkpoint"), key, "log-proof.checkpoint");
      if (checked.failure() != null) {
        return new Verdict.Invalid(checked.failure());
      }
      Optional<LogCheckpoint> cp = Optional.of(checked.cp());
      byte[] leaf = MerkleHash.blake3().leaf(Hex.decode(address, 32, "address"));
      ProofCheck c = VERIFIER.verifyInclusion(proof, leaf, cp.get().head());
      if (c instanceof ProofCheck.Invalid inv) {
        return new Verdict.Invalid("inclusion proof: " + inv.failure() + ": " + inv.detail());
      }
      return new Verdict.Valid(
          "record "
              + address
              + " is leaf "
              + proof.leafIndex()
              + " of "
              + cp.get().origin()
              + " at size "
              + cp.get().treeSize());
    }
    if (schema.equals(LOG_CONSISTENCY)) {
      JsonReader r =
          JsonReader.of(doc, "log-consistency", JsonReader.RECORD)
              .only(Set.of("schema", "old", "new", "proof"));
      ConsistencyProof proof = ConsistencyProof.fromJson(r.required("proof"));
      Checked oldChecked = checkpoint(r.string("old"), key, "log-consistency.old");
      if (oldChecked.failure() != null) {
        return new Verdict.Invalid(oldChecked.failure());
      }
      Checked newChecked = checkpoint(r.string("new"), key, "log-consistency.new");
      if (newChecked.failure() != null) {
        return new Verdict.Invalid(newChecked.failure());
      }
      Optional<LogCheckpoint> old = Optional.of(oldChecked.cp());
      Optional<LogCheckpoint> now = Optional.of(newChecked.cp());
      if (!old.get().origin().equals(now.get().origin())) {
        return new Verdict.Invalid(
            "the checkpoints are of different logs: "
                + old.get().origin()
                + " and "
                + now.get().origin());
      }
      ProofCheck c = VERIFIER.verifyConsistency(proof, old.get().head(), now.get().head());
      if (c instanceof ProofCheck.Invalid inv) {
        return new Verdict.Invalid("consistency proof: " + inv.failure() + ": " + inv.detail());
      }
      return new Verdict.Valid(
          "log "
              + now.get().origin()
              + " at size "
              + old.get().treeSize()
              + " is a prefix of it at size "
              + now.get().treeSize());
    }
    throw new AttestException("not a node-log proof document (schema " + schema + ")");
  }

  /** The aggregate an envelope carries (its signature is checked separately). */
  public static FleetAggregate aggregate(Envelope env, String what) {
    if (!env.schema().orElse("").equals(FleetAggregate.SCHEMA)) {
      throw new AttestException(what + ": not a " + FleetAggregate.SCHEMA + " envelope");
    }
    return FleetAggregate.fromCore(env.core());
  }

  /**
   * Checks a fleet inclusion or consistency document against the aggregate envelope(s): each
   * aggregate's signature (by {@code signer} when given), the document naming them, the proofs.
   */
  public static Verdict verifyFleet(
      JsonNode doc, Envelope aggregate, Optional<Envelope> old, Optional<PublicKey> signer) {
    FleetAggregate agg = aggregate(aggregate, "--aggregate");
    if (aggregate.verify(signer) instanceof Verification.Invalid inv) {
      return new Verdict.Invalid("--aggregate: " + inv.reason());
    }
    String schema = doc.path("schema").asText();
    if (schema.equals(FLEET_PROOF)) {
      JsonReader r =
          JsonReader.of(doc, "fleet-proof", JsonReader.RECORD)
              .only(Set.of("schema", "aggregate", "run_id", "receipts"));
      String runId = r.string("run_id");
      if (!r.hex32("aggregate").equals(aggregate.address())) {
        return new Verdict.Invalid(
            "the proof is for aggregate " + r.hex32("aggregate") + ", not " + aggregate.address());
      }
      JsonNode list = r.required("receipts");
      if (!list.isArray() || list.isEmpty()) {
        throw new AttestException("fleet-proof.receipts: expected a non-empty array");
      }
      List<String> shown = new ArrayList<>();
      for (int i = 0; i < list.size(); i++) {
        String at = "fleet-proof.receipts[" + i + "]";
        JsonReader e =
            JsonReader.of(list.get(i), at, JsonReader.RECORD)
                .only(Set.of("receipt", "tree", "proof"));
        String receipt = e.hex32("receipt");
        InclusionProof p = InclusionProof.fromJson(e.required("proof"));
        boolean durable = e.node().has("tree");
        if (durable && !DURABLE_TREE.equals(e.string("tree"))) {
          throw new AttestException(at + ".tree: expected \"" + DURABLE_TREE + "\" or absent");
        }
        if (durable && agg.durable().isEmpty()) {
          return new Verdict.Invalid(
              at + ": receipt " + receipt + " is proven in a durable part the aggregate has not");
        }
        TreeHead head = durable ? agg.durable().get().head() : agg.head();
        byte[] leaf = MerkleHash.blake3().leaf(Hex.decode(receipt, 32, "receipt"));
        if (VERIFIER.verifyInclusion(p, leaf, head) instanceof ProofCheck.Invalid inv) {
          return new Verdict.Invalid(
              at
                  + ": receipt "
                  + receipt
                  + (durable ? " (durable)" : "")
                  + ": "
                  + inv.failure()
                  + ": "
                  + inv.detail());
        }
        shown.add(receipt + (durable ? " (durable leaf " : " (leaf ") + p.leafIndex() + ")");
      }
      return new Verdict.Valid(
          "run "
              + runId
              + " is in aggregate "
              + aggregate.address()
              + " of "
              + agg.treeSize()
              + " receipts: "
              + String.join(", ", shown));
    }
    if (schema.equals(FLEET_CONSISTENCY)) {
      if (old.isEmpty()) {
        throw new AttestException(
            "a fleet consistency proof needs --old FILE (the older aggregate)");
      }
      FleetAggregate before = aggregate(old.get(), "--old");
      if (old.get().verify(signer) instanceof Verification.Invalid inv) {
        return new Verdict.Invalid("--old: " + inv.reason());
      }
      JsonReader r =
          JsonReader.of(doc, "fleet-consistency", JsonReader.RECORD)
              .only(Set.of("schema", "old", "new", "proof", "durable_proof"));
      if (!r.hex32("old").equals(old.get().address())
          || !r.hex32("new").equals(aggregate.address())) {
        return new Verdict.Invalid("the proof names other aggregates than --old and --aggregate");
      }
      if (!before.fleetId().equals(agg.fleetId())
          || before.firstPosition() != agg.firstPosition()) {
        return new Verdict.Invalid("the aggregates are not of the same log and start");
      }
      ConsistencyProof p = ConsistencyProof.fromJson(r.required("proof"));
      if (VERIFIER.verifyConsistency(p, before.head(), agg.head())
          instanceof ProofCheck.Invalid inv) {
        return new Verdict.Invalid("consistency proof: " + inv.failure() + ": " + inv.detail());
      }
      String durableShown = "";
      if (before.durable().isPresent()) {
        FleetAggregate.Durable od = before.durable().get();
        if (agg.durable().isEmpty() || agg.durable().get().firstPosition() != od.firstPosition()) {
          return new Verdict.Invalid(
              "--old has a durable part from durable-ledger position "
                  + od.firstPosition()
                  + "; --aggregate has none from there");
        }
        if (!r.node().has("durable_proof")) {
          throw new AttestException(
              "fleet-consistency.durable_proof: missing (--old has a durable part)");
        }
        ConsistencyProof dp = ConsistencyProof.fromJson(r.required("durable_proof"));
        if (VERIFIER.verifyConsistency(dp, od.head(), agg.durable().get().head())
            instanceof ProofCheck.Invalid inv) {
          return new Verdict.Invalid(
              "fleet-consistency.durable_proof: " + inv.failure() + ": " + inv.detail());
        }
        durableShown =
            "; its durable part ("
                + od.treeSize()
                + ") is a prefix of the newer's ("
                + agg.durable().get().treeSize()
                + ")";
      } else if (r.node().has("durable_proof")) {
        throw new AttestException(
            "fleet-consistency.durable_proof: --old has no durable part to extend");
      }
      return new Verdict.Valid(
          "aggregate "
              + old.get().address()
              + " ("
              + before.treeSize()
              + " receipts) is a prefix of "
              + aggregate.address()
              + " ("
              + agg.treeSize()
              + ")"
              + durableShown);
    }
    throw new AttestException("not a fleet proof document (schema " + schema + ")");
  }
}
