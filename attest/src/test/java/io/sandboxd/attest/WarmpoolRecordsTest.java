package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The signed warm-pool records (WIRE.md §2.9): round trips, strict parsing, bundle checks. */
class WarmpoolRecordsTest {
  static final String POOL = "ab".repeat(32) + "/none/S2";

  static WarmpoolClaim claim(long idleUj) {
    return new WarmpoolClaim(
        POOL, "0011223344556677", 1_000, 61_000, "S2", null, idleUj, Provenance.Estimator, "run-1");
  }

  static WarmpoolEvict evict() {
    return new WarmpoolEvict(
        POOL,
        "8899aabbccddeeff",
        1_000,
        11_000,
        WarmpoolEvict.Reason.Ttl,
        50_001_234,
        Provenance.Estimator);
  }

  @Test
  void roundTripsThroughCanonicalBytes() {
    WarmpoolClaim c = claim(300_000_000);
    assertEquals(
        c, WarmpoolClaim.fromCore(CanonicalJson.parse(CanonicalJson.canonicalString(c.toCore()))));
    WarmpoolClaim withManifest =
        new WarmpoolClaim(POOL, "i", 1, 2, "S2", "cd".repeat(32), 0, Provenance.ModelBased, "r");
    assertEquals(withManifest, WarmpoolClaim.fromCore(withManifest.toCore()));
    WarmpoolEvict e = evict();
    assertEquals(e, WarmpoolEvict.fromCore(e.toCore()));
    assertTrue(CanonicalJson.canonicalString(c.toCore()).contains("\"manifest\":null"));
  }

  @Test
  void parsingIsStrict() {
    ObjectNode claim = claim(1).toCore();
    ObjectNode evict = evict().toCore();
    String bonus = Refusal.of(WarmpoolClaim::fromCore, claim, c -> c.put("bonus", 1));
    assertTrue(bonus.contains("bonus"), bonus);
    Refusal.of(WarmpoolEvict::fromCore, evict, c -> c.remove("overhead_uj"));
    String whim = Refusal.of(WarmpoolEvict::fromCore, evict, c -> c.put("reason", "Whim"));
    assertTrue(whim.contains("Whim"), whim);
    Refusal.of(WarmpoolClaim::fromCore, claim, c -> c.put("accrued_idle_uj", 1.5));
    Refusal.of(WarmpoolClaim::fromCore, claim, c -> c.put("tier", "S9"));
    Refusal.of(WarmpoolClaim::fromCore, claim, c -> c.put("claimed_ms", 999));
    Refusal.of(WarmpoolEvict::fromCore, evict, c -> c.put("schema", WarmpoolClaim.SCHEMA));
  }

  @Test
  void bundleVerifiesClaimsAndEvictionsAndChecksIdleEnergyAgainstTheReceipt() {
    SigningKey key = SigningKey.generate();
    Envelope c = Envelope.sign(claim(42).toCore(), key);
    Envelope e = Envelope.sign(evict().toCore(), key);
    assertInstanceOf(
        EvidenceBundle.Verdict.Valid.class, EvidenceBundle.verify(List.of(c, e), Set.of()));
    // A malformed claim, even validly signed, does not verify.
    ObjectNode bad = claim(42).toCore();
    bad.put("tier", "S9");
    assertInstanceOf(
        EvidenceBundle.Verdict.Invalid.class,
        EvidenceBundle.verify(List.of(Envelope.sign(bad, key)), Set.of()));
    // Flipping a signed byte fails the signature.
    ObjectNode json = (ObjectNode) CanonicalJson.parse(e.toJsonLine());
    ((ObjectNode) json.get("core")).put("overhead_uj", 0);
    assertInstanceOf(
        EvidenceBundle.Verdict.Invalid.class,
        EvidenceBundle.verify(List.of(Envelope.fromJson(json)), Set.of()));
  }
}
