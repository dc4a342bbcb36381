package io.sandboxd.enforcer;

import static io.sandboxd.enforcer.JcpFixtures.CEILING;
import static io.sandboxd.enforcer.JcpFixtures.CHILD;
import static io.sandboxd.enforcer.JcpFixtures.PARENT;
import static io.sandboxd.enforcer.JcpFixtures.WIDE_CHILD;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.enforcer.StandingGrant.MintState;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The mint decision of WIRE.md §2.11: one test per refusal rule, and the order they apply in. */
class StandingGrantTest {
  private static final JsonNode EVENT = CanonicalJson.parse(JcpFixtures.EVENT_JSON);
  private static final long NOW = 1_700_000_000_000L;
  private static final StandingGrant SG = StandingGrant.of(JcpFixtures.policy(), PARENT);

  private static MintRule refusal(StandingGrant.Verdict v) {
    return assertInstanceOf(StandingGrant.Refused.class, v).rule();
  }

  @Test
  void aChildWithinTheCeilingOnAMatchingEventIsMinted() {
    StandingGrant.Verdict v = SG.decide(EVENT, CHILD, MintState.fresh(), true, NOW);
    assertEquals(new StandingGrant.Mint(0, CHILD), v);
    // The ceiling itself is within the ceiling.
    assertInstanceOf(
        StandingGrant.Mint.class, SG.decide(EVENT, CEILING, MintState.fresh(), true, NOW));
  }

  @Test
  void childWiderThanTheCeilingIsRefusedNamingThePart() {
    MintRule r = refusal(SG.decide(EVENT, WIDE_CHILD, MintState.fresh(), true, NOW));
    assertEquals("child_within_ceiling", r.rule());
    assertEquals("$.host.random", ((MintRule.ChildWiderThanCeiling) r).wider().path());
  }

  @Test
  void ceilingWiderThanTheParentIsRefusedAtRegistrationAndAtEveryMint() {
    StandingGrant wide =
        StandingGrant.of(JcpFixtures.policy(JcpFixtures.WIDE_CEILING_JSON), PARENT);
    assertEquals("ceiling_within_parent", wide.policyRule().orElseThrow().rule());
    assertEquals(
        "ceiling_within_parent",
        refusal(wide.decide(EVENT, CHILD, MintState.fresh(), true, NOW)).rule());
    assertTrue(SG.policyRule().isEmpty());
  }

  @Test
  void theMintPastMaxChildrenIsRefused() {
    // max_children 3: seq 0..2 mint, the 4th is refused however long ago the others were.
    assertInstanceOf(
        StandingGrant.Mint.class,
        SG.decide(EVENT, CHILD, new MintState(2, List.of(1L, 2L)), true, NOW));
    MintRule r = refusal(SG.decide(EVENT, CHILD, new MintState(3, List.of(1L, 2L, 3L)), true, NOW));
    assertEquals(new MintRule.MaxChildren(3), r);
    assertEquals("max_children", r.rule());
  }

  @Test
  void theRateWindowSlides() {
    // max 2 per 1000 ms: two mints inside (now-1000, now] refuse a third; at the window's edge one
    // has left it.
    MintState two = new MintState(2, List.of(NOW - 999, NOW - 10));
    assertEquals(
        new MintRule.RateWindow(2, 1000), refusal(SG.decide(EVENT, CHILD, two, true, NOW)));
    MintState edge = new MintState(2, List.of(NOW - 1000, NOW - 10));
    assertEquals(new StandingGrant.Mint(2, CHILD), SG.decide(EVENT, CHILD, edge, true, NOW));
  }

  @Test
  void anEventMatchingNoTriggerIsRefused() {
    MintRule r =
        refusal(
            SG.decide(
                CanonicalJson.parse(JcpFixtures.OTHER_EVENT_JSON),
                CHILD,
                MintState.fresh(),
                true,
                NOW));
    assertEquals(new MintRule.NoMatchingTrigger("push"), r);
    MintRule t =
        refusal(
            SG.decide(
                CanonicalJson.parse("{\"type\":\"pull\",\"repo\":\"sandboxd\"}"),
                CHILD,
                MintState.fresh(),
                true,
                NOW));
    assertEquals("trigger", t.rule());
  }

  @Test
  void anExpiredPolicyAndAReleasedParentAreRefused() {
    long after = JcpFixtures.NOT_AFTER_MS + 1;
    assertEquals(
        "not_after_ms", refusal(SG.decide(EVENT, CHILD, MintState.fresh(), true, after)).rule());
    assertInstanceOf(
        StandingGrant.Mint.class,
        SG.decide(EVENT, CHILD, MintState.fresh(), true, JcpFixtures.NOT_AFTER_MS));
    assertEquals(
        new MintRule.ParentNotHeld(PARENT.grantsId()),
        refusal(SG.decide(EVENT, CHILD, MintState.fresh(), false, NOW)));
  }

  @Test
  void aParentThatIsNotThePolicysOrACeilingThatDoesNotParseIsAnError() {
    assertTrue(
        assertThrows(GrantsException.class, () -> StandingGrant.of(JcpFixtures.policy(), CHILD))
            .path()
            .equals("$.parent_grants_id"));
    JcpMintPolicy p = JcpFixtures.policy();
    JcpMintPolicy bad =
        new JcpMintPolicy(
            p.issuer(),
            p.holder(),
            p.parentGrantsId(),
            CanonicalJson.parse("{\"host\":{\"logging\":1}}"),
            p.maxChildren(),
            p.rateWindowMs(),
            p.rateMax(),
            p.triggers(),
            p.notAfterMs());
    assertEquals(
        "$.ceiling.host.logging",
        assertThrows(GrantsException.class, () -> StandingGrant.of(bad, PARENT)).path());
  }

  @Test
  void aSeededRunOfMintsNeverExceedsTheCountOrTheRate() {
    long seed = 1515;
    Random r = new Random(seed);
    JcpMintPolicy p = JcpFixtures.policy();
    StandingGrant sg =
        StandingGrant.of(
            new JcpMintPolicy(
                p.issuer(),
                p.holder(),
                p.parentGrantsId(),
                p.ceiling(),
                40,
                1000,
                3,
                p.triggers(),
                p.notAfterMs()),
            PARENT);
    List<Long> minted = new ArrayList<>();
    long now = NOW;
    for (int i = 0; i < 500; i++) {
      now += r.nextInt(300);
      StandingGrant.Verdict v =
          sg.decide(EVENT, CHILD, new MintState(minted.size(), minted), true, now);
      if (v instanceof StandingGrant.Mint m) {
        assertEquals(minted.size(), m.seq(), "seed " + seed);
        minted.add(now);
      }
      long t = now;
      long inWindow = minted.stream().filter(x -> x > t - 1000).count();
      assertTrue(inWindow <= 3, "seed " + seed + ": " + inWindow + " mints in one window");
    }
    assertEquals(40, minted.size(), "seed " + seed);
  }
}
