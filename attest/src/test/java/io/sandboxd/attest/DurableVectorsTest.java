package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** durable.json is what the generator makes, and every vector holds when read as a consumer. */
class DurableVectorsTest {
  static Path file() {
    return VectorFiles.path("durable/durable.json");
  }

  private static JsonNode root() throws IOException {
    return CanonicalJson.parse(Files.readAllBytes(file()));
  }

  /** The envelopes of a vector's array, in order. */
  private static List<Envelope> envelopes(JsonNode array) {
    List<Envelope> out = new ArrayList<>();
    array.forEach(e -> out.add(Envelope.fromJson(e)));
    return out;
  }

  /** The names of the cases in {@code section} of the file. */
  private static Set<String> caseNames(String section) throws IOException {
    Set<String> names = new HashSet<>();
    root().get(section).forEach(c -> names.add(c.get("name").textValue()));
    return names;
  }

  /** The case called {@code name} in {@code section} of the file. */
  private static JsonNode namedCase(String section, String name) throws IOException {
    for (JsonNode c : root().get(section)) {
      if (c.get("name").textValue().equals(name)) {
        return c;
      }
    }
    throw new AssertionError("no " + section + " case " + name);
  }

  @Test
  void thePublishedFileIsWhatTheGeneratorMakesByteForByte() throws IOException {
    VectorFiles.assertGenerated(file(), DurableVectors.generate());
  }

  @Test
  void theKeysComeFromTheirSeeds() throws IOException {
    for (JsonNode k : root().get("keys")) {
      SigningKey key = SigningKey.fromSeed(Hex.decode(k.get("seed").textValue(), 32, "seed"));
      assertEquals(k.get("public_key").textValue(), key.publicKey().hex());
    }
  }

  @Test
  void everyCoreIsCanonicalHashesToItsAddressAndIsSigned() throws IOException {
    JsonNode root = root();
    Set<String> kinds = new HashSet<>();
    List<JsonNode> items = new ArrayList<>();
    root.get("segments").forEach(items::add);
    root.get("receipts").forEach(items::add);
    for (JsonNode v : items) {
      byte[] core = v.get("core").textValue().getBytes(StandardCharsets.UTF_8);
      assertArrayEquals(core, CanonicalJson.canonicalize(core));
      assertEquals(Blake3.hex(core), v.get("address").textValue());
      PublicKey pk = PublicKey.ofHex(v.get("public_key").textValue(), "public_key");
      assertTrue(pk.verify(core, Hex.decode(v.get("signature").textValue(), 64, "signature")));
      if (v.has("kind")) {
        kinds.add(v.get("kind").textValue());
        RunSegment s = RunSegment.fromCore(CanonicalJson.parse(core));
        assertEquals(v.get("kind").textValue(), s.kind().name());
      }
    }
    assertEquals(Set.of("execute", "suspend", "resume"), kinds);
    for (JsonNode r : root.get("snapshot_refs")) {
      byte[] bytes = r.get("canonical").textValue().getBytes(StandardCharsets.UTF_8);
      assertArrayEquals(bytes, CanonicalJson.canonicalize(bytes));
      assertEquals(Blake3.hex(bytes), r.get("address").textValue());
    }
  }

  @Test
  void theExportedChainVerifiesAndItsTotalIsReceiptsPlusIdle() throws IOException {
    JsonNode chain = root().get("chain");
    List<Envelope> envs = envelopes(chain.get("envelopes"));
    Set<PublicKey> trusted = new HashSet<>();
    for (JsonNode k : root().get("keys")) {
      trusted.add(PublicKey.ofHex(k.get("public_key").textValue(), "public_key"));
    }
    EvidenceBundle.Verdict.Valid ok =
        assertInstanceOf(EvidenceBundle.Verdict.Valid.class, EvidenceBundle.verify(envs, trusted));
    JsonNode want = chain.get("verdict");
    assertEquals(want.get("length").asInt(), ok.chains().get(0).length());
    assertEquals(want.get("head").textValue(), ok.chains().get(0).head());
    // Independently of EvidenceBundle: sum the receipts' total_uj and the segments' idle_uj.
    long receipts = 0;
    long idle = 0;
    for (Envelope e : envs) {
      if (e.schema().orElse("").equals(Receipt.SCHEMA)) {
        receipts += e.core().get("total_uj").asLong();
      } else {
        idle += e.core().get("idle_uj").asLong();
      }
    }
    assertTrue(idle > 0, "the resume carries idle energy");
    assertEquals(receipts, want.get("receipts_uj").asLong());
    assertEquals(idle, want.get("idle_uj").asLong());
    assertEquals(receipts + idle, want.get("total_uj").asLong());
    assertEquals(receipts + idle, ok.totals().get(0).totalUj());
    // Moved between hosts: without naming both keys it is refused, not silently accepted.
    assertInstanceOf(EvidenceBundle.Verdict.Invalid.class, EvidenceBundle.verify(envs, Set.of()));
  }

  @Test
  void everyTamperedVariantFailsWhereTheVectorSays() throws IOException {
    for (JsonNode t : root().get("tampered")) {
      String name = t.get("name").textValue();
      List<Envelope> segs = envelopes(t.get("segments"));
      SegmentChain.Verdict.Invalid inv =
          assertInstanceOf(
              SegmentChain.Verdict.Invalid.class,
              SegmentChain.verify(segs, Optional.empty()),
              name);
      JsonNode want = t.get("verdict");
      assertEquals(want.get("fails_at").asLong(), inv.seq(), name + ": " + inv.reason());
      assertTrue(inv.reason().contains(want.get("kind").textValue()), name + ": " + inv.reason());
      // Every variant but the flipped byte is properly signed: the chain rules, not a
      // signature, catch it.
      if (!name.equals("flipped-byte")) {
        for (Envelope e : segs) {
          assertTrue(e.verify(Optional.empty()).isValid(), name);
        }
      }
    }
    assertEquals(
        Set.of(
            "flipped-byte",
            "reordered",
            "missing",
            "duplicated",
            "forked",
            "drifted-manifest",
            "wider-grants",
            "taint-laundered"),
        caseNames("tampered"));
  }

  @Test
  void aForkIsReportedAsOneByTheBundleVerifierToo() throws IOException {
    List<Envelope> segs = envelopes(namedCase("tampered", "forked").get("segments"));
    EvidenceBundle.Verdict.Invalid inv =
        assertInstanceOf(
            EvidenceBundle.Verdict.Invalid.class,
            EvidenceBundle.verify(
                segs,
                Set.of(DurableVectors.HOST_A.publicKey(), DurableVectors.HOST_B.publicKey())));
    assertTrue(inv.reason().startsWith("fork: "), inv.reason());
    assertTrue(inv.where().startsWith("seq 1 "), inv.where());
  }

  @Test
  void everyBudgetCaseGetsItsVerdictAndTheConsistentOneAddsUpFromTheFileAlone() throws IOException {
    for (JsonNode c : root().get("budget_cases")) {
      String name = c.get("name").textValue();
      List<Envelope> envs = envelopes(c.get("envelopes"));
      Set<PublicKey> trusted = new HashSet<>();
      c.get("trusted").forEach(k -> trusted.add(PublicKey.ofHex(k.textValue(), "trusted")));
      EvidenceBundle.Verdict v = EvidenceBundle.verify(envs, trusted);
      JsonNode want = c.get("verdict");
      if (want.get("valid").asBoolean()) {
        assertInstanceOf(EvidenceBundle.Verdict.Valid.class, v, name + ": " + v);
      } else {
        EvidenceBundle.Verdict.Invalid inv =
            assertInstanceOf(EvidenceBundle.Verdict.Invalid.class, v, name);
        assertTrue(inv.where().startsWith(want.get("where").textValue()), name + ": " + inv);
        assertTrue(inv.reason().contains(want.get("kind").textValue()), name + ": " + inv);
      }
    }
    assertEquals(
        Set.of(
            "cumulative-consistent",
            "cumulative-does-not-add-up",
            "exceeds-grant",
            "breach-ends-chain",
            "untrusted-key"),
        caseNames("budget_cases"));
    // Independently of EvidenceBundle: walk the consistent chain in seq order and add each
    // execute segment's receipt to the running sums; every segment must state exactly them.
    JsonNode consistent = namedCase("budget_cases", "cumulative-consistent");
    java.util.Map<String, JsonNode> receipts = new java.util.HashMap<>();
    List<JsonNode> segs = new ArrayList<>();
    for (JsonNode e : consistent.get("envelopes")) {
      Envelope env = Envelope.fromJson(e);
      if (env.schema().orElse("").equals(Receipt.SCHEMA)) {
        receipts.put(env.address(), env.core());
      } else {
        segs.add(env.core());
      }
    }
    segs.sort(java.util.Comparator.comparingLong(s -> s.get("seq").asLong()));
    long ms = 0;
    long uj = 0;
    for (JsonNode s : segs) {
      if (!s.get("receipt").isNull()) {
        JsonNode r = receipts.get(s.get("receipt").textValue());
        ms += r.get("cpu_time_ms").asLong();
        uj += r.get("total_uj").asLong();
      }
      JsonNode b = s.get("budget");
      assertEquals(ms, b.get("consumed").get("cpu_time_ms").asLong());
      assertEquals(uj, b.get("consumed").get("energy_uj").asLong());
      assertTrue(ms <= b.get("granted").get("cpu_time_ms").asLong());
      assertTrue(uj <= b.get("granted").get("energy_uj").asLong());
    }
    assertEquals(5, segs.size());
  }
}
