package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Optional;
import java.util.Set;

/**
 * What the fleet aggregator hands back for one shipped record: the record's address, its RFC 9162
 * inclusion proof in the fleet log (BLAKE3, WIRE.md §2.10) and the signed checkpoint (C2SP signed
 * note) of the tree size the proof is for. A node forgets nothing until it holds a valid one.
 */
public record FleetProof(String address, InclusionProof proof, String checkpoint) {
  private static final Set<String> FIELDS = Set.of("address", "proof", "checkpoint");

  public FleetProof {
    Hex.decode(address, 32, "fleet-proof.address");
  }

  public ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("address", address);
    o.set("proof", proof.toJson());
    o.put("checkpoint", checkpoint);
    return o;
  }

  public static FleetProof fromJson(JsonNode json) {
    JsonReader r = JsonReader.of(json, "fleet-proof", JsonReader.RECORD).only(FIELDS);
    return new FleetProof(
        r.hex32("address"), InclusionProof.fromJson(r.required("proof")), r.string("checkpoint"));
  }

  /**
   * Checks the checkpoint's signature by the aggregator ({@code origin}, {@code aggregator}), that
   * the proof is for the checkpoint's tree size, and that leaf BLAKE3(0x00 ‖ address) is included
   * under its root.
   *
   * @return the verified checkpoint
   * @throws AttestException (a {@link NoteException} for the note) naming what does not hold
   */
  public LogCheckpoint verify(PublicKey aggregator, String origin) {
    LogCheckpoint cp = LogCheckpoint.verify(checkpoint, aggregator, Optional.of(origin));
    if (proof.treeSize() != cp.treeSize()) {
      throw new AttestException(
          "fleet-proof.proof.tree_size: "
              + proof.treeSize()
              + ", the checkpoint is for tree size "
              + cp.treeSize());
    }
    byte[] leaf = MerkleHash.blake3().leaf(Hex.decode(address, 32, "fleet-proof.address"));
    ProofCheck c = MerkleVerifier.blake3().verifyInclusion(proof, leaf, cp.head());
    if (!c.isValid()) {
      throw new AttestException("fleet-proof: record " + address + " is not included: " + c);
    }
    return cp;
  }
}
