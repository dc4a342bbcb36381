package io.sandboxd.daemon.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Ed25519Engine;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.WarmpoolEvict;
import io.sandboxd.daemon.NodeIdentity;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The sealer signs warm-pool evictions as it signs run records: with the node's key, as given. */
class RecordSealerTest {
  @TempDir Path tmp;

  @Test
  void evictionsAreSignedByTheNodeInTheOrderGiven() throws Exception {
    NodeIdentity node =
        NodeIdentity.load(tmp, tmp.resolve("keys/node.ed25519"), Ed25519Engine::bouncyCastle);
    List<WarmpoolEvict> evicted =
        List.of(
            new WarmpoolEvict(
                "pool-a",
                "inst-1",
                1_000,
                61_000,
                WarmpoolEvict.Reason.Ttl,
                7,
                Provenance.Estimator),
            new WarmpoolEvict(
                "pool-b",
                "inst-2",
                2_000,
                3_000,
                WarmpoolEvict.Reason.Capacity,
                0,
                Provenance.Estimator));
    List<Envelope> sealed = new RecordSealer(node).evictions(evicted);
    assertEquals(evicted.size(), sealed.size());
    for (int i = 0; i < evicted.size(); i++) {
      Envelope e = sealed.get(i);
      assertTrue(e.verify(Optional.of(node.key().publicKey())).isValid(), "eviction " + i);
      assertEquals(evicted.get(i), WarmpoolEvict.fromCore(e.core()));
    }
    SigningKey other = SigningKey.generate();
    assertTrue(!sealed.get(0).verify(Optional.of(other.publicKey())).isValid());
  }
}
