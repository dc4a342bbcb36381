package io.sandboxd.daemon.durable;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A bundle's JCP records are bounded before any of them is checked. */
class BundleJcpTest {
  @Test
  void moreRecordsThanARunCanHoldAreRefusedBeforeAnySignatureIsChecked() {
    Envelope one =
        Envelope.sign(CanonicalJson.parse("{\"schema\":\"x/1\",\"n\":1}"), SigningKey.generate());
    List<Envelope> many = Collections.nCopies(BundleJcp.MAX_RECORDS + 1, one);
    // No segments at all: the bound is checked first, so nothing else is looked at.
    DurableRunException.BadBundle e =
        assertThrows(
            DurableRunException.BadBundle.class,
            () -> BundleJcp.check("run-1", List.of(), many, null));
    assertTrue(
        e.getMessage().contains("jcp: " + (BundleJcp.MAX_RECORDS + 1) + " records"),
        e.getMessage());
  }
}
