package io.sandboxd.daemon.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.sandboxd.daemon.run.AdmissionException;
import io.sandboxd.daemon.run.RunNotFoundException;
import org.junit.jupiter.api.Test;

/** Echoed input is cut; what a description says about the fault stays. */
class BoundedDescriptionTest {
  @Test
  void aLongEchoedRunIdIsCutAndItsLengthSaid() {
    String id = "r".repeat(10_000);
    Status s = ErrorStatus.of(new RunNotFoundException(id));
    assertEquals(Status.Code.NOT_FOUND, s.getCode());
    String d = s.getDescription();
    assertTrue(d.startsWith("run_id: no run \"rrr"), d);
    assertTrue(d.contains("... (10002 characters)"), d);
    assertTrue(d.endsWith(" on this node"), d);
    assertTrue(d.length() < 300, d);
  }

  @Test
  void manyLongPiecesAndWideCharactersStayUnderTheTrailerBound() {
    String words = ("\u00e9\u4e2d\ud83d\ude00 ".repeat(3000)) + ("x".repeat(150) + " ").repeat(200);
    String d = BoundedDescription.of("grants: " + words);
    assertTrue(
        BoundedDescription.encodedLength(d, d.length()) <= BoundedDescription.MAX_ENCODED,
        () -> "encoded " + BoundedDescription.encodedLength(d, d.length()));
    assertTrue(d.endsWith("cut)"), d);
    assertTrue(d.startsWith("grants: "), d);
    // No half surrogate pair is left behind by a cut.
    for (int i = 0; i < d.length(); i++) {
      if (Character.isHighSurrogate(d.charAt(i))) {
        assertTrue(Character.isLowSurrogate(d.charAt(i + 1)), "at " + i);
      }
    }
  }

  @Test
  void aShortDescriptionIsKeptAsItIs() {
    assertEquals("limit: 5 is fine", BoundedDescription.of("limit: 5 is fine"));
    assertEquals(null, BoundedDescription.of(null));
  }

  @Test
  void unsignedFieldsAboveTheirRangeAreRefusedNamingTheField() {
    assertEquals(100, RequestFields.count("limit", 0, 100, 10_000));
    assertEquals(10_000, RequestFields.count("limit", 10_000, 100, 10_000));
    AdmissionException high =
        assertThrows(AdmissionException.class, () -> RequestFields.count("limit", -1, 100, 10));
    assertTrue(high.getMessage().startsWith("limit: 4294967295 "), high.getMessage());
    AdmissionException wide =
        assertThrows(
            AdmissionException.class,
            () -> RequestFields.upTo("timeout_ms", Long.MIN_VALUE, 600_000));
    assertTrue(wide.getMessage().startsWith("timeout_ms: 9223372036854775808 "), wide.getMessage());
    assertEquals(0L, RequestFields.upTo("old_size", 0, Long.MAX_VALUE));
  }
}
