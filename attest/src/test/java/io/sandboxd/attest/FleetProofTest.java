package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The aggregator's per-record proof as a node checks it before it forgets anything. */
class FleetProofTest {
  private static final SigningKey AGG = SeededKeys.filled(0x33);
  private static final SigningKey OTHER = SeededKeys.filled(0x34);

  private static List<byte[]> addresses(int n) {
    List<byte[]> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(Blake3.hash(new byte[] {(byte) i}));
    }
    return out;
  }

  private static FleetProof proof(MerkleTree t, List<byte[]> addrs, int i, SigningKey k) {
    String note = LogCheckpoint.of("test.fleet", t.head()).sign(k);
    return new FleetProof(Hex.encode(addrs.get(i)), t.inclusionProof(i), note);
  }

  @Test
  void everyIndexOfTreesUpTo17VerifiesAndRoundTrips() {
    for (int n = 1; n <= 17; n++) {
      List<byte[]> addrs = addresses(n);
      MerkleTree t = MerkleTree.blake3(addrs);
      for (int i = 0; i < n; i++) {
        FleetProof p = proof(t, addrs, i, AGG);
        assertEquals(n, p.verify(AGG.publicKey(), "test.fleet").treeSize());
        FleetProof back =
            FleetProof.fromJson(CanonicalJson.parse(CanonicalJson.canonicalize(p.toJson())));
        back.verify(AGG.publicKey(), "test.fleet");
      }
    }
  }

  @Test
  void wrongKeyOriginSizeOrAddressIsRefused() {
    List<byte[]> addrs = addresses(9);
    MerkleTree t = MerkleTree.blake3(addrs);
    FleetProof p = proof(t, addrs, 4, AGG);
    assertThrows(NoteException.class, () -> p.verify(OTHER.publicKey(), "test.fleet"));
    assertThrows(NoteException.class, () -> p.verify(AGG.publicKey(), "other.fleet"));
    // A proof for another tree size than the checkpoint's.
    FleetProof older =
        new FleetProof(
            p.address(), MerkleTree.blake3(addrs.subList(0, 8)).inclusionProof(4), p.checkpoint());
    AttestException e =
        assertThrows(AttestException.class, () -> older.verify(AGG.publicKey(), "test.fleet"));
    assertTrue(e.getMessage().contains("tree size"), e.getMessage());
    // Another record's address under this path.
    FleetProof swapped = new FleetProof(Hex.encode(addrs.get(5)), p.proof(), p.checkpoint());
    assertThrows(AttestException.class, () -> swapped.verify(AGG.publicKey(), "test.fleet"));
  }
}
