package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpChild;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.SegmentChain;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Each case of {@code amendment_chain} and {@code child_uses} in vectors/standing/standing.json,
 * read from the file and decided again: what a second implementation must reproduce.
 */
class AmendmentChainVectorsTest {
  static Envelope envelope(JsonNode v) {
    Envelope e =
        new Envelope(
            CanonicalJson.parse(v.get("core").textValue()),
            v.get("address").textValue(),
            v.get("signature").textValue(),
            v.get("public_key").textValue());
    assertEquals(
        Optional.empty(),
        Optional.ofNullable(e.verify(Optional.empty()))
            .filter(x -> x instanceof io.sandboxd.attest.Verification.Invalid));
    return e;
  }

  static List<Envelope> envelopes(JsonNode array) {
    List<Envelope> out = new ArrayList<>();
    array.forEach(v -> out.add(envelope(v)));
    return out;
  }

  /**
   * Each bundle case: the parked chain (the file's first {@code segments} segments) and the JCP
   * records decided again; a bundle imports only when they are valid and leave its grants in force.
   */
  @Test
  void everyBundleCaseHasTheVerdictTheFileStates() throws IOException {
    JsonNode chain = StandingVectorsTest.root().get("amendment_chain");
    List<Envelope> all = envelopes(chain.get("segments"));
    Set<String> names = new java.util.TreeSet<>();
    for (JsonNode c : chain.get("bundle_cases")) {
      String name = c.get("name").textValue();
      names.add(name);
      List<Envelope> segments = all.subList(0, c.get("segments").intValue());
      AmendmentChain.Verdict v = AmendmentChain.verify(segments, envelopes(c.get("jcp")));
      String bundleGrants = c.get("bundle_grants_id").textValue();
      if (c.has("grants_in_force")) {
        AmendmentChain.Verdict.Valid ok =
            assertInstanceOf(AmendmentChain.Verdict.Valid.class, v, name);
        assertEquals(c.get("grants_in_force").textValue(), ok.grantsInForce(), name);
        List<String> want = new ArrayList<>();
        c.get("amendments").forEach(a -> want.add(a.textValue()));
        assertEquals(want, ok.amendments(), name);
        assertEquals(
            c.get("expected").textValue(),
            ok.grantsInForce().equals(bundleGrants) ? "import" : "refused",
            name);
      } else {
        AmendmentChain.Verdict.Invalid bad =
            assertInstanceOf(AmendmentChain.Verdict.Invalid.class, v, name);
        assertEquals(c.get("where").textValue(), bad.where(), name);
        assertTrue(
            bad.reason().startsWith("amendment: rule " + c.get("rule").textValue() + ":"),
            name + ": " + bad.reason());
        assertEquals("refused", c.get("expected").textValue(), name);
      }
    }
    assertEquals(
        Set.of(
            "amended-while-parked",
            "amendment-removed",
            "widening-amendment",
            "replayed-from-another-run",
            "never-amended"),
        names);
  }

  @Test
  void everyChainCaseHasTheVerdictTheFileStates() throws IOException {
    JsonNode chain = StandingVectorsTest.root().get("amendment_chain");
    List<Envelope> segments = envelopes(chain.get("segments"));
    assertInstanceOf(
        SegmentChain.Verdict.Valid.class, SegmentChain.verify(segments, Optional.empty()));
    Set<String> names = new java.util.TreeSet<>();
    for (JsonNode c : chain.get("cases")) {
      String name = c.get("name").textValue();
      names.add(name);
      AmendmentChain.Verdict v = AmendmentChain.verify(segments, envelopes(c.get("jcp")));
      if (c.get("expected").textValue().equals("valid")) {
        AmendmentChain.Verdict.Valid ok = assertInstanceOf(AmendmentChain.Verdict.Valid.class, v);
        List<String> want = new ArrayList<>();
        c.get("amendments").forEach(a -> want.add(a.textValue()));
        assertEquals(want, ok.amendments(), name);
      } else {
        AmendmentChain.Verdict.Invalid bad =
            assertInstanceOf(AmendmentChain.Verdict.Invalid.class, v, name);
        assertEquals(c.get("where").textValue(), bad.where(), name);
        if (c.has("rule")) {
          assertTrue(
              bad.reason().startsWith("amendment: rule " + c.get("rule").textValue() + ":"),
              name + ": " + bad.reason());
        }
      }
    }
    assertEquals(
        Set.of(
            "tightening", "widening-refused", "not-issuer-signed", "replayed", "missing-amendment"),
        names);
  }

  @Test
  void theRefusedChainsNameTheAmendmentAtFault() throws IOException {
    JsonNode cases = StandingVectorsTest.root().get("amendment_chain").get("cases");
    for (JsonNode c : cases) {
      String name = c.get("name").textValue();
      if (name.equals("missing-amendment")) {
        assertTrue(c.get("where").textValue().startsWith("seq 2 of run "), c.toString());
      } else if (!name.equals("tightening")) {
        JsonNode jcp = c.get("jcp");
        assertEquals(
            jcp.get(jcp.size() - 1).get("address").textValue(), c.get("where").textValue());
      }
    }
  }

  @Test
  void everyChildUseCaseHasTheVerdictTheFileStates() throws IOException {
    JsonNode uses = StandingVectorsTest.root().get("child_uses");
    JcpMintPolicy p = JcpMintPolicy.verified(envelope(uses.get("policy")));
    assertEquals(new JcpMintPolicy.ChildUse(60_000, 2), p.childUse());
    JcpChild child = JcpChild.fromCore(envelope(uses.get("child")).core());
    int refused = 0;
    for (JsonNode c : uses.get("cases")) {
      Optional<ChildUse.Refused> r =
          ChildUse.check(
              p,
              child,
              new ChildUse.State(
                  c.get("uses").longValue(),
                  c.get("child_released").booleanValue(),
                  c.get("parent_held").booleanValue()),
              c.get("now_ms").longValue());
      assertEquals(
          c.get("expected").textValue(),
          r.map(ChildUse.Refused::rule).orElse("use"),
          c.get("name").textValue());
      refused += r.isPresent() ? 1 : 0;
    }
    assertEquals(5, refused);
  }
}
