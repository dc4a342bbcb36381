package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The sealed checkpoint record: integers and one hex chain, its own schema, strict fields. */
class StoreCheckpointTest {
  @Test
  void roundTripsThroughCanonicalBytes() {
    StoreCheckpoint cp = new StoreCheckpoint(12_345, StoreHead.EMPTY_CHAIN, 1_700_000_000_000L);
    String text = CanonicalJson.canonicalString(cp.toCore());
    assertEquals(
        "{\"chain\":\""
            + StoreHead.EMPTY_CHAIN
            + "\",\"runs\":12345,\"schema\":\"sandbox.store-checkpoint/1\",\"verified_ms\":1700000000000}",
        text);
    assertEquals(cp, StoreCheckpoint.fromCore(CanonicalJson.parse(text)));
  }

  @Test
  void aStoreHeadIsNotACheckpoint() {
    StoreHead head = new StoreHead(3, StoreHead.EMPTY_CHAIN, 5);
    AttestException e =
        assertThrows(AttestException.class, () -> StoreCheckpoint.fromCore(head.toCore()));
    assertTrue(e.getMessage().contains("store-checkpoint"), e.getMessage());
  }

  @Test
  void unknownFieldsAndBadChainsAreRefused() {
    var core = new StoreCheckpoint(1, StoreHead.EMPTY_CHAIN, 1).toCore();
    core.put("extra", 1);
    assertThrows(AttestException.class, () -> StoreCheckpoint.fromCore(core));
    var bad = new StoreCheckpoint(1, StoreHead.EMPTY_CHAIN, 1).toCore();
    bad.put("chain", "zz");
    assertThrows(AttestException.class, () -> StoreCheckpoint.fromCore(bad));
  }
}
