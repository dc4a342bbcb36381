package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.JcpChain;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.VectorFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** vectors/standing/standing.json is what the generator makes, and each vector holds on its own. */
class StandingVectorsTest {
  static Path file() {
    return VectorFiles.path("standing/standing.json");
  }

  static JsonNode root() throws IOException {
    return CanonicalJson.parse(Files.readAllBytes(file()));
  }

  @Test
  void thePublishedFileIsWhatTheGeneratorMakesByteForByte() throws IOException {
    VectorFiles.assertGenerated(file(), StandingVectors.generate());
  }

  /** An envelope from the file whose core is canonical text; checks bytes, address, signature. */
  private static Envelope envelope(JsonNode v, PublicKey signer) {
    byte[] core = v.get("core").textValue().getBytes(StandardCharsets.UTF_8);
    assertArrayEquals(core, CanonicalJson.canonicalize(core), "core is not canonical");
    assertEquals(Blake3.hex(core), v.get("address").textValue());
    assertEquals(signer.hex(), v.get("public_key").textValue());
    assertTrue(signer.verify(core, Hex.decode(v.get("signature").textValue(), 64, "signature")));
    return new Envelope(
        CanonicalJson.parse(core),
        v.get("address").textValue(),
        v.get("signature").textValue(),
        v.get("public_key").textValue());
  }

  private static PublicKey key(JsonNode root, String name) {
    JsonNode k = root.get("keys").get(name);
    PublicKey pk = PublicKey.ofHex(k.get("public_key").textValue(), name);
    assertEquals(
        pk, SigningKey.fromSeed(Hex.decode(k.get("seed").textValue(), 32, "seed")).publicKey());
    return pk;
  }

  private static Grants grants(JsonNode root, String name) {
    JsonNode g = root.get("grants").get(name);
    Grants parsed = Grants.parse(g.get("input").textValue().getBytes(StandardCharsets.UTF_8));
    assertEquals(
        g.get("canonical").textValue(),
        new String(parsed.canonicalBytes(), StandardCharsets.UTF_8));
    assertEquals(g.get("grants_id").textValue(), parsed.grantsId());
    return parsed;
  }

  @Test
  void thePolicyAndTheChildChainVerify() throws IOException {
    JsonNode root = root();
    PublicKey issuer = key(root, "issuer");
    PublicKey holder = key(root, "holder");
    Envelope policy = envelope(root.get("policy"), issuer);
    JcpMintPolicy p = JcpMintPolicy.verified(policy);
    assertEquals(grants(root, "parent").grantsId(), p.parentGrantsId());
    assertEquals(holder.hex(), p.holder());
    List<Envelope> children = new ArrayList<>();
    for (JsonNode c : root.get("children")) {
      Envelope e = envelope(c, holder);
      assertEquals(
          Blake3.hex(
              CanonicalJson.canonicalize(
                  c.get("event").textValue().getBytes(StandardCharsets.UTF_8))),
          e.core().get("event").textValue());
      children.add(e);
    }
    assertEquals(p.maxChildren(), children.size());
    assertInstanceOf(JcpChain.Verdict.Valid.class, JcpChain.children(policy, children));
  }

  @Test
  void everyMintVectorHasItsVerdictAndEveryRuleIsCovered() throws IOException {
    JsonNode root = root();
    PublicKey issuer = key(root, "issuer");
    Map<String, StandingGrant> policies = new HashMap<>();
    for (String name : List.of("policy", "wide_ceiling_policy")) {
      policies.put(
          name,
          StandingGrant.of(
              JcpMintPolicy.verified(envelope(root.get(name), issuer)), grants(root, "parent")));
    }
    assertEachVerdictAndEveryOutcome(
        root.get("mints"),
        m -> {
          List<Long> recent = new ArrayList<>();
          m.get("recent_mints_ms").forEach(x -> recent.add(x.longValue()));
          StandingGrant.Verdict v =
              policies
                  .get(m.get("policy").textValue())
                  .decide(
                      CanonicalJson.parse(m.get("event").textValue()),
                      grants(root, m.get("child").textValue()),
                      new StandingGrant.MintState(m.get("minted").longValue(), recent),
                      m.get("parent_held").booleanValue(),
                      m.get("now_ms").longValue());
          return v instanceof StandingGrant.Mint
              ? "mint"
              : ((StandingGrant.Refused) v).rule().rule();
        },
        Set.of(
            "mint",
            "trigger",
            "max_children",
            "rate",
            "child_within_ceiling",
            "ceiling_within_parent",
            "not_after_ms",
            "parent_held"));
  }

  @Test
  void everyAmendmentVectorHasItsVerdictAndEveryRuleIsCovered() throws IOException {
    JsonNode root = root();
    PublicKey agent = key(root, "agent");
    List<Envelope> checkpoints = new ArrayList<>();
    root.get("checkpoints").forEach(c -> checkpoints.add(envelope(c, agent)));
    assertInstanceOf(JcpChain.Verdict.Valid.class, JcpChain.checkpoints(checkpoints));
    Grants atCheckpoints = grants(root, "ceiling");
    assertEachVerdictAndEveryOutcome(
        root.get("amendments"),
        a -> {
          Envelope e = envelope(a, PublicKey.ofHex(a.get("public_key").textValue(), "public_key"));
          Amendments.RunState run =
              new Amendments.RunState(
                  key(root, "issuer").hex(),
                  checkpoints,
                  Map.of(atCheckpoints.grantsId(), atCheckpoints),
                  grants(root, a.get("in_force").textValue()),
                  a.get("already_applied").booleanValue() ? Set.of(e.address()) : Set.of());
          Amendments.Verdict v = Amendments.decide(e, run);
          return v instanceof Amendments.Accepted
              ? "accepted"
              : ((Amendments.Refused) v).rule().rule();
        },
        Set.of(
            "accepted",
            "distinct_principal",
            "issuer",
            "tighten_only",
            "checkpoint_in_chain",
            "replay"));
  }

  /**
   * Each vector's outcome ({@code outcome} decides it and names it) is the one it expects, and
   * together the vectors reach every outcome of {@code outcomes}.
   */
  private static void assertEachVerdictAndEveryOutcome(
      JsonNode vectors, Function<JsonNode, String> outcome, Set<String> outcomes) {
    Set<String> reached = new HashSet<>();
    for (JsonNode v : vectors) {
      String got = outcome.apply(v);
      assertEquals(v.get("expected").textValue(), got, v.get("name").textValue());
      reached.add(got);
    }
    assertEquals(outcomes, reached);
  }
}
