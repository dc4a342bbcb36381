package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The store head's durable part (issue 23): absent while no durable segment was stored, so older
 * heads keep their bytes; present, it round-trips and is read strictly.
 */
class StoreHeadTest {
  @Test
  void aHeadWithoutDurableSegmentsKeepsItsOldBytes() {
    StoreHead head = new StoreHead(3, StoreHead.EMPTY_CHAIN, 5);
    String text = CanonicalJson.canonicalString(head.toCore());
    assertFalse(text.contains("durable"), text);
    assertEquals(head, StoreHead.fromCore(CanonicalJson.parse(text)));
  }

  @Test
  void theDurablePartRoundTripsAndIsReadStrictly() {
    String chain = StoreHead.extend(StoreHead.EMPTY_CHAIN, Blake3.hex(new byte[] {1}));
    StoreHead head = new StoreHead(3, StoreHead.EMPTY_CHAIN, 5, 1, chain);
    String text = CanonicalJson.canonicalString(head.toCore());
    assertTrue(text.contains("\"durable\":{\"chain\":\"" + chain + "\",\"segments\":1}"), text);
    assertEquals(head, StoreHead.fromCore(CanonicalJson.parse(text)));
    var extra = head.toCore();
    ((com.fasterxml.jackson.databind.node.ObjectNode) extra.get("durable")).put("runs", 1);
    assertThrows(AttestException.class, () -> StoreHead.fromCore(extra));
    var bad = head.toCore();
    ((com.fasterxml.jackson.databind.node.ObjectNode) bad.get("durable")).put("chain", "zz");
    assertThrows(AttestException.class, () -> StoreHead.fromCore(bad));
  }
}
