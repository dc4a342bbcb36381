package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** In-toto statement, DSSE envelope and Sigstore bundle v0.3 around a run's evidence. */
class IntotoBundleTest {
  private static final SigningKey NODE = SeededKeys.filled(7);
  private static final SigningKey OTHER = SeededKeys.filled(8);
  private static final byte[] MODULE = "\0asm\1\0\0\0".getBytes(StandardCharsets.ISO_8859_1);
  private static final byte[] STDOUT = "42\n".getBytes(StandardCharsets.UTF_8);
  private static final byte[] STDERR = new byte[0];

  private static Envelope receipt() {
    return Envelope.sign(
        Receipt.builder()
            .runId("r1")
            .unit(Blake3.hex(MODULE))
            .grantsId("a".repeat(64))
            .tier("S2")
            .energy(
                Map.of(
                    DeviceClass.Cpu, new ClassEnergy(5, Provenance.Estimator, "estimator", 1, 1)))
            .cpuTimeMs(1)
            .wallMs(2)
            .startedMs(100)
            .endedMs(102)
            .build()
            .toCore(),
        NODE);
  }

  private static Envelope attestation(Envelope receipt, SigningKey key) {
    Attestation a =
        Attestation.builder()
            .host(new HostIdentity("node-a", key.publicKey().hex(), "linux-x86_64"))
            .tier("S2")
            .grantsId("a".repeat(64))
            .receipt(receipt.address())
            .unit(Blake3.hex(MODULE))
            .journalRoot("d".repeat(64))
            .outcome(new Outcome.Completed())
            .clockConstantMs(0L)
            .issuedMs(1_700_000_000_000L)
            .inputs(new Attestation.Inputs(List.of("x"), null))
            .outputs(
                new Attestation.Outputs(Attestation.Blob.of(STDOUT), Attestation.Blob.of(STDERR)))
            .build();
    return Envelope.sign(a.toCore(), key);
  }

  static IntotoStatement statement() {
    Envelope r = receipt();
    return RunStatement.of(
        "r1",
        r,
        attestation(r, NODE),
        new RunStatement.Artifact("module", Blake3.hex(MODULE), Optional.of(MODULE)),
        Optional.of(new RunStatement.Artifact("stdout", Blake3.hex(STDOUT), Optional.of(STDOUT))),
        Optional.of(new RunStatement.Artifact("stderr", Blake3.hex(STDERR), Optional.empty())));
  }

  @Test
  void paeMatchesTheDsseSpecExample() {
    byte[] pae =
        DsseEnvelope.pae(
            "http://example.com/HelloWorld", "hello world".getBytes(StandardCharsets.UTF_8));
    assertEquals(
        "DSSEv1 29 http://example.com/HelloWorld 11 hello world",
        new String(pae, StandardCharsets.UTF_8));
    // Lengths are bytes, not characters.
    assertEquals(
        "DSSEv1 1 t 2 é",
        new String(
            DsseEnvelope.pae("t", "é".getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8));
  }

  @Test
  void statementNamesModuleAndOutputsByBlake3AndSha256() {
    ObjectNode json = statement().toJson();
    assertEquals("https://in-toto.io/Statement/v1", json.get("_type").textValue());
    assertEquals(RunStatement.PREDICATE_TYPE, json.get("predicateType").textValue());
    JsonNode module = json.at("/subject/0");
    assertEquals("module", module.get("name").textValue());
    assertEquals(Blake3.hex(MODULE), module.at("/digest/blake3").textValue());
    assertEquals(RunStatement.sha256(MODULE), module.at("/digest/sha256").textValue());
    // SHA-256 of "42\n", computed independently of the code under test.
    assertEquals(
        "084c799cd551dd1d8d5c5f9a5d593b2e931f5e36122ee5c793c1d08a19839cc0",
        json.at("/subject/1/digest/sha256").textValue());
    assertTrue(json.at("/subject/2/digest/sha256").isMissingNode());
    assertEquals("r1", json.at("/predicate/run_id").textValue());
    assertEquals(Receipt.SCHEMA, json.at("/predicate/receipt/core/schema").textValue());
    // The payload is the statement's canonical bytes.
    assertArrayEquals(CanonicalJson.canonicalize(json), statement().payload());
  }

  /**
   * The DSSE signature checked without the project's DSSE or key code: PAE spelled out from the
   * DSSE v1 text, the key given to the JDK's Ed25519 as an X.509 SubjectPublicKeyInfo.
   */
  @Test
  void theDsseSignatureVerifiesOverPaeWithTheJdksOwnEd25519() throws Exception {
    ObjectNode json = SigstoreBundle.sign(statement(), NODE).toJson();
    String type = json.at("/dsseEnvelope/payloadType").textValue();
    byte[] body = Base64.getDecoder().decode(json.at("/dsseEnvelope/payload").textValue());
    byte[] sig = Base64.getDecoder().decode(json.at("/dsseEnvelope/signatures/0/sig").textValue());
    String head = "DSSEv1 " + type.length() + " " + type + " " + body.length + " ";
    byte[] pae = new byte[head.length() + body.length];
    System.arraycopy(head.getBytes(StandardCharsets.US_ASCII), 0, pae, 0, head.length());
    System.arraycopy(body, 0, pae, head.length(), body.length);
    assertTrue(jdkVerify(NODE.publicKey().hex(), pae, sig));
    assertFalse(jdkVerify(OTHER.publicKey().hex(), pae, sig));
    pae[pae.length - 2] ^= 1;
    assertFalse(jdkVerify(NODE.publicKey().hex(), pae, sig));
  }

  private static boolean jdkVerify(String keyHex, byte[] message, byte[] sig) throws Exception {
    byte[] spki = java.util.HexFormat.of().parseHex("302a300506032b6570032100" + keyHex);
    java.security.Signature v = java.security.Signature.getInstance("Ed25519");
    v.initVerify(
        java.security.KeyFactory.getInstance("Ed25519")
            .generatePublic(new java.security.spec.X509EncodedKeySpec(spki)));
    v.update(message);
    return v.verify(sig);
  }

  @Test
  void bundleRoundTripsAndVerifiesUnderTheNodeKeyOnly() {
    SigstoreBundle b = SigstoreBundle.sign(statement(), NODE);
    ObjectNode json = b.toJson();
    assertEquals(SigstoreBundle.MEDIA_TYPE, json.get("mediaType").textValue());
    assertEquals(
        NODE.publicKey().hex(), json.at("/verificationMaterial/publicKey/hint").textValue());
    assertEquals(IntotoStatement.PAYLOAD_TYPE, json.at("/dsseEnvelope/payloadType").textValue());
    SigstoreBundle back = SigstoreBundle.fromJson(CanonicalJson.parse(b.toJson().toString()));
    assertEquals(b, back);
    IntotoStatement s = back.verify(NODE.publicKey());
    assertEquals("r1", RunStatement.check(s, NODE.publicKey()));
    AttestException e = assertThrows(AttestException.class, () -> back.verify(OTHER.publicKey()));
    assertTrue(e.getMessage().contains("does not verify"), e.getMessage());
  }

  @Test
  void everyOneByteChangeOfPayloadSignatureOrTypeFails() {
    SigstoreBundle b = SigstoreBundle.sign(statement(), NODE);
    byte[] payload = b.envelope().payloadBytes();
    byte[] sig = Base64.getDecoder().decode(b.envelope().signatures().get(0).sig());
    for (int i = 0; i < payload.length; i++) {
      byte[] p = payload.clone();
      p[i] ^= 0x01;
      assertFalse(
          with(b, b.envelope().payloadType(), p, sig).envelope().verify(NODE.publicKey()).isValid(),
          "payload byte " + i);
    }
    for (int i = 0; i < sig.length; i++) {
      byte[] s = sig.clone();
      s[i] ^= (byte) 0x80;
      assertFalse(
          with(b, b.envelope().payloadType(), payload, s)
              .envelope()
              .verify(NODE.publicKey())
              .isValid(),
          "signature byte " + i);
    }
    // The type is authenticated too: the same bytes under another type do not verify.
    SigstoreBundle retyped = with(b, "application/vnd.in-toto+jsoN", payload, sig);
    assertFalse(retyped.envelope().verify(NODE.publicKey()).isValid());
    assertThrows(AttestException.class, () -> retyped.verify(NODE.publicKey()));
  }

  @Test
  void everyOneByteChangeOfTheFileTextIsRefusedOrLeavesTheSignedBytesAlone() {
    SigstoreBundle b = SigstoreBundle.sign(statement(), NODE);
    byte[] text = CanonicalJson.canonicalString(b.toJson()).getBytes(StandardCharsets.UTF_8);
    Seeded.repeat(
        1,
        g -> {
          // Every byte outside the payload's base64, and 300 drawn inside it (the payload bytes
          // themselves are covered exhaustively above).
          String t = new String(text, StandardCharsets.UTF_8);
          int from = t.indexOf(b.envelope().payload());
          int to = from + b.envelope().payload().length();
          for (int i = 0; i < text.length; i++) {
            if (i >= from && i < to && g.random().nextInt(to - from) >= 300) {
              continue;
            }
            byte[] m = text.clone();
            byte nb;
            do {
              nb = (byte) (0x20 + g.random().nextInt(0x5f));
            } while (nb == m[i]);
            m[i] = nb;
            SigstoreBundle got;
            try {
              got = SigstoreBundle.fromJson(CanonicalJson.parse(m));
              got.verify(NODE.publicKey());
            } catch (AttestException refused) {
              continue;
            }
            // Accepted: then only unauthenticated hints changed (or base64 bits that decode the
            // same), never the signed bytes.
            assertEquals(b.envelope().payloadType(), got.envelope().payloadType(), "byte " + i);
            assertArrayEquals(
                b.envelope().payloadBytes(), got.envelope().payloadBytes(), "byte " + i);
          }
        });
  }

  @Test
  void aStatementWhoseSubjectsDoNotMatchTheAttestationIsRefused() {
    Envelope r = receipt();
    Envelope a = attestation(r, NODE);
    RunStatement.Artifact module =
        new RunStatement.Artifact("module", Blake3.hex(MODULE), Optional.empty());
    // An output missing
    AttestException missing =
        assertThrows(
            AttestException.class,
            () -> RunStatement.of("r1", r, a, module, Optional.empty(), Optional.empty()));
    assertTrue(missing.getMessage().contains("expected"), missing.getMessage());
    // Another module
    byte[] other = "other".getBytes(StandardCharsets.UTF_8);
    AttestException wrong =
        assertThrows(
            AttestException.class,
            () ->
                RunStatement.of(
                    "r1",
                    r,
                    a,
                    new RunStatement.Artifact("module", Blake3.hex(other), Optional.of(other)),
                    Optional.of(
                        new RunStatement.Artifact("stdout", Blake3.hex(STDOUT), Optional.empty())),
                    Optional.of(
                        new RunStatement.Artifact(
                            "stderr", Blake3.hex(STDERR), Optional.empty()))));
    assertTrue(wrong.getMessage().contains("module"), wrong.getMessage());
    // Bytes that do not hash to the address named
    assertThrows(
        AttestException.class,
        () -> new RunStatement.Artifact("module", Blake3.hex(MODULE), Optional.of(other)));
    // An attestation signed by another key
    assertThrows(
        AttestException.class,
        () ->
            RunStatement.check(
                new IntotoStatement(
                    statement().subjects(), RunStatement.PREDICATE_TYPE, statement().predicate()),
                OTHER.publicKey()));
  }

  @Test
  void malformedBundlesAreRefusedNamingTheField() {
    ObjectNode json = SigstoreBundle.sign(statement(), NODE).toJson();
    ObjectNode v02 =
        json.deepCopy().put("mediaType", "application/vnd.dev.sigstore.bundle+json;version=0.2");
    assertTrue(
        assertThrows(AttestException.class, () -> SigstoreBundle.fromJson(v02))
            .getMessage()
            .contains("mediaType"));
    ObjectNode noHint = json.deepCopy();
    ((ObjectNode) noHint.get("verificationMaterial")).remove("publicKey");
    assertTrue(
        assertThrows(AttestException.class, () -> SigstoreBundle.fromJson(noHint))
            .getMessage()
            .contains("publicKey"));
    ObjectNode twoSigs = json.deepCopy();
    var sigs =
        (com.fasterxml.jackson.databind.node.ArrayNode) twoSigs.at("/dsseEnvelope/signatures");
    sigs.add(sigs.get(0).deepCopy());
    AttestException e =
        assertThrows(
            AttestException.class, () -> SigstoreBundle.fromJson(twoSigs).verify(NODE.publicKey()));
    assertTrue(e.getMessage().contains("exactly one"), e.getMessage());
  }

  private static SigstoreBundle with(SigstoreBundle b, String type, byte[] payload, byte[] sig) {
    return new SigstoreBundle(
        b.publicKeyHint(),
        new DsseEnvelope(
            type,
            Base64.getEncoder().encodeToString(payload),
            List.of(
                new DsseEnvelope.DsseSignature(
                    b.envelope().signatures().get(0).keyid(),
                    Base64.getEncoder().encodeToString(sig)))));
  }
}
