package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.MerkleTree;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The typed journal entry keeps the stored bytes, and so every recorded journal root, unchanged.
 */
class JournalEntryTest {
  // An entry as the run store holds it (written by the JSON-node journal this type replaced).
  static final String STORED =
      "{\"call\":\"clock_now\",\"decision\":\"Allow\",\"request\":\""
          + "a".repeat(64)
          + "\",\"response\":\""
          + "b".repeat(64)
          + "\",\"schema\":\"sandbox.journal-entry/1\",\"seq\":7,\"taint_after\":[\"net:x:1\"]}";

  @Test
  void aStoredEntryRoundTripsByteIdentically() {
    JournalEntry e = JournalEntry.parse(STORED);
    assertEquals(7, e.seq());
    assertEquals("clock_now", e.call());
    assertEquals(List.of("net:x:1"), e.taintAfter());
    assertEquals(STORED, e.canonicalString());
    assertArrayEquals(STORED.getBytes(StandardCharsets.UTF_8), e.canonicalBytes());
  }

  @Test
  void recordedEntriesRoundTripAndTheirRootIsTheRootOfTheStoredBytes() {
    long seed = new Random().nextLong();
    Random rnd = new Random(seed);
    Journal journal = new Journal();
    for (int i = 0; i < 200; i++) {
      ObjectNode request = CanonicalJson.mapper().createObjectNode();
      if (rnd.nextBoolean()) {
        request.put("wasi", "fd_read").put("len", rnd.nextInt(1 << 20));
      }
      byte[] response = new byte[rnd.nextInt(40)];
      rnd.nextBytes(response);
      TreeSet<String> taint = new TreeSet<>();
      for (int t = rnd.nextInt(3); t > 0; t--) {
        taint.add("storage:d" + rnd.nextInt(9) + "/\u00e9\"\\");
      }
      journal.record(
          rnd.nextBoolean() ? "storage_read" : "random_u64",
          request,
          response,
          rnd.nextBoolean() ? "Allow" : "Denied",
          taint);
    }
    List<byte[]> leaves = new ArrayList<>();
    List<JournalEntry> reread = new ArrayList<>();
    for (JournalEntry e : journal.entries()) {
      // What the store keeps, read back as replay reads it.
      String stored = e.canonicalString();
      JournalEntry back = JournalEntry.parse(stored);
      assertEquals(e, back, "seed " + seed);
      assertEquals(stored, back.canonicalString(), "seed " + seed);
      // The leaf input is the JCS of the JSON tree, exactly as before the typed entry.
      assertArrayEquals(
          CanonicalJson.canonicalize(CanonicalJson.parse(stored)),
          back.canonicalBytes(),
          "seed " + seed);
      leaves.add(Blake3.hash(stored.getBytes(StandardCharsets.UTF_8)));
      reread.add(back);
    }
    String root = Hex.encode(MerkleTree.blake3(leaves).root());
    assertEquals(journal.root(), root, "seed " + seed);
    assertEquals(root, Journal.rootOf(reread), "seed " + seed);
  }

  @Test
  void malformedEntriesAreRefusedNamingTheField() {
    assertRefused(STORED.replace("\"seq\":7", "\"seq\":7,\"zz\":1"), "$.zz");
    assertRefused(STORED.replace("\"call\":\"clock_now\",", ""), "$.call");
    assertRefused(STORED.replace("\"seq\":7", "\"seq\":\"7\""), "$.seq");
    assertRefused(STORED.replace("journal-entry/1", "journal-entry/2"), "$.schema");
    assertRefused(STORED.replace("[\"net:x:1\"]", "[1]"), "$.taint_after[0]");
  }

  /** Parsing {@code json} is refused with a message naming {@code field}. */
  private static void assertRefused(String json, String field) {
    String message =
        assertThrows(AttestException.class, () -> JournalEntry.parse(json)).getMessage();
    assertTrue(message.contains(field), message);
  }
}
