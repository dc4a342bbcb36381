package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The signed envelope of WIRE.md §2.0.4 and conformance check 24 (§5). */
class EnvelopeTest {
  private static final SigningKey KEY = seeded(1);
  private static final SigningKey OTHER = seeded(2);

  static SigningKey seeded(int b) {
    return SeededKeys.filled(b);
  }

  /** A core with every JSON kind a record uses: strings (with escapes), numbers, nesting. */
  static ObjectNode sampleCore() {
    ObjectNode o = JsonNodeFactory.instance.objectNode();
    o.put("schema", "sandbox.attestation/1");
    o.put("unit", "ab".repeat(32));
    o.put("issued_ms", 1_700_000_000_123L);
    o.put("zero", 0);
    o.put("max", CanonicalJson.MAX_SAFE_INTEGER);
    o.put("text", "héllo \"wörld\"\n\u0001✓");
    o.putNull("manifest");
    o.put("granted", true);
    o.put("tampering_detected", false);
    ObjectNode host = o.putObject("host");
    host.put("id", "node-7");
    host.put("platform", "linux-x86_64");
    ArrayNode arr = o.putArray("taint");
    arr.add("inbox/**");
    arr.add(42);
    arr.addObject().put("k", "v");
    o.putObject("outcome").putObject("Terminated").put("breach", "CpuTime");
    return o;
  }

  private static byte[] canonical(JsonNode n) {
    return CanonicalJson.canonicalize(n);
  }

  private static String reason(Verification v) {
    return assertInstanceOf(Verification.Invalid.class, v).reason();
  }

  // ---------------------------------------------------------------- valid envelopes

  @Test
  void aSignedEnvelopeVerifies() {
    Envelope env = Envelope.sign(sampleCore(), KEY);
    assertTrue(env.verify(Optional.empty()).isValid());
    assertInstanceOf(Verification.Valid.class, env.verify(Optional.of(KEY.publicKey())));
  }

  @Test
  void addressAndSignatureCoverTheCanonicalBytesOfCore() {
    ObjectNode core = sampleCore();
    Envelope env = Envelope.sign(core, KEY);
    byte[] bytes = canonical(core);
    assertEquals(Blake3.hex(bytes), env.address());
    assertEquals(env.address(), Envelope.addressOf(core));
    assertEquals(64, env.address().length());
    assertEquals(128, env.signature().length());
    assertEquals(KEY.publicKey().hex(), env.publicKey());
    // The signature is over the canonical bytes themselves, not over the address (§2.0.3).
    byte[] sig = Hex.decode(env.signature(), 64, "sig");
    assertTrue(KEY.publicKey().verify(bytes, sig));
    assertFalse(KEY.publicKey().verify(env.address().getBytes(StandardCharsets.US_ASCII), sig));
    assertFalse(KEY.publicKey().verify(Blake3.hash(bytes), sig));
  }

  @Test
  void aSignedEnvelopesLineIsItsCanonicalFormAndOutlivesTheCallersTree() {
    ObjectNode core = sampleCore();
    Envelope env = Envelope.sign(core, KEY);
    String line = env.toJsonLine();
    // The kept text is the core as signed: changing the caller's tree afterwards changes nothing.
    core.put("zz", "changed after signing");
    assertEquals(line, env.toJsonLine());
    assertEquals(new String(canonical(env.toJson()), StandardCharsets.UTF_8), line);
    Envelope reread = Envelope.fromJson(CanonicalJson.parse(line));
    // Equal as values (a tree parsed from text may hold other number node types than the one
    // built, so the envelope compares with another read of the same text).
    Envelope again = Envelope.fromJson(CanonicalJson.parse(line));
    assertEquals(again, reread);
    assertEquals(again.hashCode(), reread.hashCode());
    assertEquals(env.address(), reread.address());
    // Read back, the envelope has no kept text and writes the same line from its core.
    assertEquals(line, reread.toJsonLine());
    assertTrue(reread.verify(Optional.of(KEY.publicKey())).isValid());
    assertNotEquals(env, Envelope.sign(core, KEY));
  }

  @Test
  void keyOrderDoesNotChangeAddressOrSignature() {
    ObjectNode a = JsonNodeFactory.instance.objectNode().put("b", 1).put("a", "x");
    ObjectNode b = JsonNodeFactory.instance.objectNode().put("a", "x").put("b", 1);
    Envelope ea = Envelope.sign(a, KEY);
    Envelope eb = Envelope.sign(b, KEY);
    assertEquals(ea.address(), eb.address());
    assertEquals(ea.signature(), eb.signature());
  }

  @Test
  void jsonLineRoundTripsAndIsCanonical() {
    Envelope env = Envelope.sign(sampleCore(), KEY);
    String line = env.toJsonLine();
    assertFalse(line.contains("\n"), "one line");
    assertTrue(line.startsWith("{\"address\":\"" + env.address() + "\",\"core\":{"), line);
    assertTrue(
        line.endsWith(
            ",\"public_key\":\""
                + env.publicKey()
                + "\",\"signature\":\""
                + env.signature()
                + "\"}"),
        line);
    Envelope back = Envelope.fromJson(CanonicalJson.parse(line));
    assertEquals(env.address(), back.address());
    assertEquals(env.signature(), back.signature());
    assertEquals(env.publicKey(), back.publicKey());
    assertEquals(line, back.toJsonLine());
    assertTrue(back.verify(Optional.of(KEY.publicKey())).isValid());
    assertEquals(Optional.of("sandbox.attestation/1"), back.schema());
  }

  @Test
  void theEnvelopeKeepsItsOwnCopyOfCore() {
    ObjectNode core = sampleCore();
    Envelope env = Envelope.sign(core, KEY);
    core.put("issued_ms", 1);
    core.put("extra", "later");
    assertTrue(env.verify(Optional.empty()).isValid());
    assertFalse(env.core().has("extra"));
  }

  // ---------------------------------------------------------------- check 24: core tampering

  /** Verifies the envelope built from mutated canonical core bytes, if they still parse. */
  private static void assertMutatedCoreFails(Envelope env, byte[] mutated) {
    JsonNode parsed;
    try {
      parsed = CanonicalJson.parse(mutated);
    } catch (CanonicalJsonException e) {
      // Not JSON any more: such a core cannot even be read, let alone verified.
      return;
    }
    Envelope forged = new Envelope(parsed, env.address(), env.signature(), env.publicKey());
    Verification v = forged.verify(Optional.of(KEY.publicKey()));
    assertFalse(v.isValid(), "mutation accepted: " + new String(mutated, StandardCharsets.UTF_8));
  }

  @Test
  void flippingAnyBitOfAnyCoreByteFailsVerification() {
    Envelope env = Envelope.sign(sampleCore(), KEY);
    byte[] bytes = canonical(env.core());
    int stillJson = 0;
    for (int pos = 0; pos < bytes.length; pos++) {
      for (int bit = 0; bit < 8; bit++) {
        byte[] m = bytes.clone();
        m[pos] ^= (byte) (1 << bit);
        assertMutatedCoreFails(env, m);
        try {
          CanonicalJson.parse(m);
          stillJson++;
        } catch (CanonicalJsonException e) {
          // counted only when it parses
        }
      }
    }
    // Make sure the exhaustive loop really exercised parseable forgeries, not only junk.
    assertTrue(stillJson > bytes.length, "parseable mutations: " + stillJson);
  }

  @Test
  void replacingAnyCoreByteFailsVerification() {
    Seeded.repeat(
        500,
        g -> {
          int position = g.intBetween(0, 100_000);
          int replacement = g.intBetween(0, 255);
          Envelope env = Envelope.sign(sampleCore(), KEY);
          byte[] bytes = canonical(env.core());
          int pos = position % bytes.length;
          byte[] m = bytes.clone();
          m[pos] = (byte) replacement;
          if (m[pos] == bytes[pos]) {
            m[pos] ^= 0x01;
          }
          assertMutatedCoreFails(env, m);
        });
  }

  @Test
  void changingAnyByteOfTheCoreOnTheWireFails() {
    Seeded.repeat(
        300,
        g -> {
          int position = g.intBetween(0, 100_000);
          int xor = g.intBetween(1, 255);
          // The same attack through the real ingest path (envelope text → parse → fromJson →
          // verify): refused at ingest, or read and then refused by verification.
          Envelope env = Envelope.sign(sampleCore(), KEY);
          TamperedLine.of(env, position, xor)
              .ifPresent(forged -> assertFalse(forged.verify(Optional.empty()).isValid()));
        });
  }

  /** Every string and number leaf of a core, as a JSON pointer. */
  private static List<String> leaves(JsonNode n, String at) {
    List<String> out = new ArrayList<>();
    if (n.isObject()) {
      for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        out.addAll(leaves(e.getValue(), at + "/" + e.getKey()));
      }
    } else if (n.isArray()) {
      for (int i = 0; i < n.size(); i++) {
        out.addAll(leaves(n.get(i), at + "/" + i));
      }
    } else if (n.isTextual() || n.isNumber()) {
      out.add(at);
    }
    return out;
  }

  private static void replaceLeaf(JsonNode root, String pointer, JsonNode value) {
    int cut = pointer.lastIndexOf('/');
    JsonNode parent = root.at(pointer.substring(0, cut));
    String last = pointer.substring(cut + 1);
    if (parent.isArray()) {
      ((ArrayNode) parent).set(Integer.parseInt(last), value);
    } else {
      ((ObjectNode) parent).set(last, value);
    }
  }

  @Test
  void changingAnyStringOrNumberInCoreFails() {
    Seeded.repeat(
        300,
        g -> {
          int which = g.intBetween(0, 10_000);
          int delta = g.intBetween(1, 1000);
          Envelope env = Envelope.sign(sampleCore(), KEY);
          JsonNode core = env.core().deepCopy();
          List<String> ptrs = leaves(core, "");
          String ptr = ptrs.get(which % ptrs.size());
          JsonNode old = core.at(ptr);
          JsonNode replacement;
          if (old.isNumber()) {
            long v = old.longValue();
            long nv = v >= delta ? v - delta : v + delta;
            replacement = JsonNodeFactory.instance.numberNode(nv);
          } else {
            String s = old.textValue();
            int i = delta % (s.length() + 1);
            replacement =
                TextNode.valueOf(s.substring(0, i) + (char) ('a' + delta % 26) + s.substring(i));
          }
          replaceLeaf(core, ptr, replacement);
          Envelope forged = new Envelope(core, env.address(), env.signature(), env.publicKey());
          String r = reason(forged.verify(Optional.of(KEY.publicKey())));
          assertTrue(r.startsWith("address mismatch"), r);

          // Even with the address recomputed, the signature still covers the original bytes.
          Envelope readdressed =
              new Envelope(core, Envelope.addressOf(core), env.signature(), env.publicKey());
          String r2 = reason(readdressed.verify(Optional.empty()));
          assertTrue(r2.contains("signature does not verify"), r2);
        });
  }

  // ---------------------------------------------------------------- check 24: keys

  @Test
  void aSignatureFromAnotherKeyFails() {
    ObjectNode core = sampleCore();
    Envelope good = Envelope.sign(core, KEY);
    Envelope byOther = Envelope.sign(core, OTHER);
    assertEquals(good.address(), byOther.address());
    assertNotEquals(good.signature(), byOther.signature());
    // Other's signature presented under KEY's public key.
    Envelope swapped = new Envelope(core, good.address(), byOther.signature(), good.publicKey());
    String r = reason(swapped.verify(Optional.empty()));
    assertTrue(r.contains("signature does not verify"), r);
    // KEY's signature presented under OTHER's public key.
    Envelope claimed = new Envelope(core, good.address(), good.signature(), byOther.publicKey());
    assertFalse(claimed.verify(Optional.empty()).isValid());
    assertFalse(claimed.verify(Optional.of(OTHER.publicKey())).isValid());
  }

  @Test
  void anExpectedSignerMismatchFails() {
    Envelope byOther = Envelope.sign(sampleCore(), OTHER);
    // Self-consistent, so it verifies when no signer is required...
    assertTrue(byOther.verify(Optional.empty()).isValid());
    assertTrue(byOther.verify(Optional.of(OTHER.publicKey())).isValid());
    // ...but not as KEY's statement (signer_is).
    String r = reason(byOther.verify(Optional.of(KEY.publicKey())));
    assertTrue(r.contains("expected signer " + KEY.publicKey().hex()), r);
    assertTrue(r.contains(OTHER.publicKey().hex()), r);
  }

  @Test
  void anAddressMismatchIsReportedWithBothAddresses() {
    Envelope env = Envelope.sign(sampleCore(), KEY);
    String wrong = "0".repeat(64);
    Envelope forged = new Envelope(env.core(), wrong, env.signature(), env.publicKey());
    String r = reason(forged.verify(Optional.empty()));
    assertTrue(r.startsWith("address mismatch"), r);
    assertTrue(r.contains(wrong), r);
    assertTrue(r.contains(env.address()), r);
  }

  @Test
  void aTamperedSignatureFails() {
    Envelope env = Envelope.sign(sampleCore(), KEY);
    for (int i = 0; i < env.signature().length(); i += 7) {
      char[] s = env.signature().toCharArray();
      s[i] = s[i] == '0' ? '1' : '0';
      Envelope forged = new Envelope(env.core(), env.address(), new String(s), env.publicKey());
      assertFalse(forged.verify(Optional.empty()).isValid(), "position " + i);
    }
  }

  @Test
  void aPublicKeyThatIsNotACurvePointIsInvalidNotAnException() {
    Envelope env = Envelope.sign(sampleCore(), KEY);
    Envelope forged = new Envelope(env.core(), env.address(), env.signature(), "f".repeat(64));
    String r = reason(forged.verify(Optional.empty()));
    assertTrue(r.contains("public_key"), r);
  }

  @Test
  void aMalformedSignatureOnADirectlyBuiltEnvelopeIsInvalidNotAnException() {
    Envelope env = Envelope.sign(sampleCore(), KEY);
    Envelope shortSig = new Envelope(env.core(), env.address(), "00", env.publicKey());
    assertTrue(reason(shortSig.verify(Optional.empty())).contains("signature"));
    Envelope upper =
        new Envelope(
            env.core(), env.address(), env.signature().toUpperCase(Locale.ROOT), env.publicKey());
    assertFalse(upper.verify(Optional.empty()).isValid());
  }

  // ---------------------------------------------------------------- fromJson strictness

  private static ObjectNode goodJson() {
    return Envelope.sign(sampleCore(), KEY).toJson();
  }

  private static String refusal(JsonNode json) {
    return assertThrows(AttestException.class, () -> Envelope.fromJson(json)).getMessage();
  }

  @Test
  void fromJsonRefusesUnknownFields() {
    ObjectNode j = goodJson();
    j.put("comment", "hi");
    assertEquals("envelope.comment: unknown field", refusal(j));
  }

  @ParameterizedTest
  @ValueSource(strings = {"address", "signature", "public_key"})
  void fromJsonRefusesUppercaseHex(String field) {
    ObjectNode j = goodJson();
    String v = j.get(field).textValue();
    // Make sure there is a letter to upper-case.
    String upper = ("a" + v.substring(1)).toUpperCase(Locale.ROOT);
    j.put(field, upper);
    String m = refusal(j);
    assertTrue(m.startsWith("envelope." + field + ":"), m);
    assertTrue(m.contains("not lowercase hex"), m);
  }

  @ParameterizedTest
  @ValueSource(strings = {"address", "signature", "public_key"})
  void fromJsonRefusesWrongLengths(String field) {
    ObjectNode j = goodJson();
    String v = j.get(field).textValue();
    int want = v.length();
    j.put(field, v.substring(2));
    String m = refusal(j);
    assertTrue(m.startsWith("envelope." + field + ":"), m);
    assertTrue(m.contains("expected " + want + " hex characters, got " + (want - 2)), m);
    j.put(field, v + "00");
    assertTrue(refusal(j).startsWith("envelope." + field + ":"));
    j.put(field, "");
    assertTrue(refusal(j).startsWith("envelope." + field + ":"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"address", "signature", "public_key"})
  void fromJsonRefusesPrefixedMissingOrNonStringHex(String field) {
    ObjectNode j = goodJson();
    String v = j.get(field).textValue();
    j.put(field, "blake3:" + v.substring(7));
    assertTrue(refusal(j).startsWith("envelope." + field + ":"));
    j.put(field, 5);
    assertEquals("envelope." + field + ": expected a string", refusal(j));
    j.putNull(field);
    assertEquals("envelope." + field + ": expected a string", refusal(j));
    j.remove(field);
    assertEquals("envelope." + field + ": expected a string", refusal(j));
  }

  @Test
  void fromJsonRefusesANonObjectCore() {
    ObjectNode j = goodJson();
    for (JsonNode bad :
        List.of(
            JsonNodeFactory.instance.arrayNode().add(1),
            TextNode.valueOf("{}"),
            JsonNodeFactory.instance.numberNode(1),
            JsonNodeFactory.instance.nullNode())) {
      j.set("core", bad);
      assertEquals("envelope.core: expected a JSON object", refusal(j), bad.toString());
    }
    j.remove("core");
    assertEquals("envelope.core: expected a JSON object", refusal(j));
  }

  @Test
  void fromJsonRefusesANonObjectEnvelope() {
    assertTrue(refusal(JsonNodeFactory.instance.arrayNode()).startsWith("envelope"));
    assertTrue(refusal(TextNode.valueOf("x")).startsWith("envelope"));
    assertThrows(AttestException.class, () -> Envelope.fromJson(null));
  }

  @Test
  void duplicateKeysInEnvelopeTextAreRefusedAtParse() {
    Envelope env = Envelope.sign(sampleCore(), KEY);
    String line = env.toJsonLine();
    String dup = line.replace("\"core\":{", "\"core\":{\"zero\":7,");
    assertThrows(CanonicalJsonException.class, () -> CanonicalJson.parse(dup));
  }

  // ---------------------------------------------------------------- numbers at sign time

  private static String signRefusal(JsonNode core) {
    return assertThrows(AttestException.class, () -> Envelope.sign(core, KEY)).getMessage();
  }

  @Test
  void floatsAreRefusedAtSignTime() {
    ObjectNode c = JsonNodeFactory.instance.objectNode().put("schema", "x").put("uj", 1.5);
    String m = signRefusal(c);
    assertTrue(m.startsWith("$.uj:"), m);
    assertTrue(m.contains("non-integer"), m);
    // A float with an integral value is still a float on the wire.
    ObjectNode whole = JsonNodeFactory.instance.objectNode().put("uj", new BigDecimal("2.0"));
    assertTrue(signRefusal(whole).startsWith("$.uj:"));
    // Parsed exponent notation is a float too.
    assertTrue(signRefusal(CanonicalJson.parse("{\"a\":{\"b\":[1e3]}}")).startsWith("$.a.b[0]:"));
  }

  @Test
  void negativeNumbersAreRefusedAtSignTime() {
    ObjectNode c = JsonNodeFactory.instance.objectNode();
    c.putObject("io").putArray("ops").add(3).add(-1);
    String m = signRefusal(c);
    assertTrue(m.startsWith("$.io.ops[1]:"), m);
    assertTrue(m.contains("-1"), m);
    assertTrue(signRefusal(CanonicalJson.parse("{\"x\":-0.5}")).startsWith("$.x:"));
  }

  @Test
  void integersAboveTwoToThe53MinusOneAreRefusedAtSignTime() {
    ObjectNode ok = JsonNodeFactory.instance.objectNode().put("n", CanonicalJson.MAX_SAFE_INTEGER);
    assertTrue(Envelope.sign(ok, KEY).verify(Optional.empty()).isValid());
    ObjectNode big =
        JsonNodeFactory.instance.objectNode().put("n", CanonicalJson.MAX_SAFE_INTEGER + 1);
    assertTrue(signRefusal(big).contains("outside [0, 2^53-1]"));
    ObjectNode huge = JsonNodeFactory.instance.objectNode().put("n", BigInteger.ONE.shiftLeft(70));
    assertTrue(signRefusal(huge).startsWith("$.n:"));
  }

  @Test
  void aFloatSmuggledInThroughFromJsonIsInvalid() {
    Envelope env = Envelope.sign(sampleCore(), KEY);
    String line = env.toJsonLine().replace("\"zero\":0", "\"zero\":0.5");
    Envelope forged = Envelope.fromJson(CanonicalJson.parse(line));
    String r = reason(forged.verify(Optional.empty()));
    assertTrue(r.startsWith("core: $.zero:"), r);
  }
}
