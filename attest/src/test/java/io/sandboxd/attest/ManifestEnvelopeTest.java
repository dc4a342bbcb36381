package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The signed manifest envelope: core, address, signature, public key and the pinned label. */
class ManifestEnvelopeTest {
  private static final SigningKey KEY = EnvelopeTest.seeded(7);
  private static final SigningKey OTHER = EnvelopeTest.seeded(8);

  private static EnvManifest manifest(String image) {
    return DevcontainerIngest.ingest(
        ("{\"image\":\""
                + image
                + "\",\"containerEnv\":{\"A\":\"1\"},"
                + "\"mounts\":[\"type=tmpfs,target=/t\"],\"features\":{\"f\":\"1\"}}")
            .getBytes(StandardCharsets.UTF_8));
  }

  private static String reason(Verification v) {
    return assertInstanceOf(Verification.Invalid.class, v).reason();
  }

  @Test
  void signedEnvelopeCarriesAddressAndPinnedOutsideTheCore() {
    EnvManifest m = manifest("ubuntu:24.04");
    ManifestEnvelope e = ManifestEnvelope.sign(m, KEY);
    ObjectNode json = e.toJson();
    assertEquals(m.address(), json.get("address").textValue());
    assertFalse(json.get("pinned").booleanValue());
    assertEquals(KEY.publicKey().hex(), json.get("public_key").textValue());
    assertFalse(json.get("core").has("pinned"));
    assertFalse(json.get("core").has("address"));
    assertTrue(e.verify(Optional.of(KEY.publicKey())).isValid());
    ManifestEnvelope back = ManifestEnvelope.fromJson(CanonicalJson.parse(e.toJsonLine()));
    assertEquals(m, back.manifest());
    assertTrue(back.verify(Optional.empty()).isValid());
    assertTrue(
        ManifestEnvelope.sign(manifest("u@sha256:" + "ab".repeat(32)), KEY)
            .toJson()
            .get("pinned")
            .booleanValue());
  }

  @Test
  void aLyingLabelATamperedCoreOrAnotherSignerFailVerification() {
    ObjectNode json = ManifestEnvelope.sign(manifest("ubuntu:24.04"), KEY).toJson();
    json.put("pinned", true);
    assertTrue(
        reason(ManifestEnvelope.fromJson(json).verify(Optional.empty())).contains("pinned says"));

    ObjectNode tampered = ManifestEnvelope.sign(manifest("ubuntu:24.04"), KEY).toJson();
    ((ObjectNode) tampered.get("core")).put("image", "ubuntu:25.04");
    assertTrue(
        reason(ManifestEnvelope.fromJson(tampered).verify(Optional.empty()))
            .contains("address mismatch"));

    ManifestEnvelope e = ManifestEnvelope.sign(manifest("ubuntu:24.04"), KEY);
    assertTrue(reason(e.verify(Optional.of(OTHER.publicKey()))).contains("expected signer"));
  }

  @Test
  void readingRefusesAnythingButTheFiveFieldsAndANormalCore() {
    ObjectNode json = ManifestEnvelope.sign(manifest("i"), KEY).toJson();
    ObjectNode extra = json.deepCopy().put("note", "x");
    assertThrows(AttestException.class, () -> ManifestEnvelope.fromJson(extra));
    ObjectNode noLabel = json.deepCopy();
    noLabel.remove("pinned");
    assertThrows(AttestException.class, () -> ManifestEnvelope.fromJson(noLabel));
    ObjectNode stringLabel = json.deepCopy().put("pinned", "false");
    assertThrows(AttestException.class, () -> ManifestEnvelope.fromJson(stringLabel));

    // A core that is signed correctly but not in normal form (unsorted mounts) is refused.
    ObjectNode core = manifest("i").toCore();
    ArrayNode mounts = core.putArray("mounts");
    mounts.addObject().put("source", "").put("target", "/z").put("kind", "tmpfs");
    mounts.addObject().put("source", "").put("target", "/a").put("kind", "tmpfs");
    ObjectNode unsorted = Envelope.sign(core, KEY).toJson().put("pinned", false);
    assertTrue(
        assertThrows(AttestException.class, () -> ManifestEnvelope.fromJson(unsorted))
            .getMessage()
            .contains("normal form"));
    ObjectNode unknown = manifest("i").toCore().put("build", "x");
    assertThrows(
        AttestException.class,
        () -> ManifestEnvelope.fromJson(Envelope.sign(unknown, KEY).toJson().put("pinned", false)));
  }

  @Test
  void fromCoreRoundTripsEveryManifest() {
    EnvManifest m = manifest("i@sha256:" + "0f".repeat(32));
    assertEquals(m, EnvManifest.fromCore(m.toCore()));
    assertTrue(ManifestEnvelope.isManifestEnvelope(ManifestEnvelope.sign(m, KEY).toJson()));
    assertFalse(
        ManifestEnvelope.isManifestEnvelope(
            Envelope.sign(EnvelopeTest.sampleCore(), KEY).toJson()));
  }
}
