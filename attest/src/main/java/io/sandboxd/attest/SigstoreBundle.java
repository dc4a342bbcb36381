package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Set;

/**
 * A Sigstore bundle v0.3 (protobuf-specs, JSON form) that carries a DSSE envelope signed by a plain
 * public key named by {@code hint}: no certificate, no transparency-log entry, no timestamp.
 */
public record SigstoreBundle(String publicKeyHint, DsseEnvelope envelope) {
  public static final String MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json";

  private static final Set<String> FIELDS =
      Set.of("mediaType", "verificationMaterial", "dsseEnvelope");

  /** Signs {@code statement} with {@code key}; the key's hex is both the hint and the keyid. */
  public static SigstoreBundle sign(IntotoStatement statement, SigningKey key) {
    String hint = key.publicKey().hex();
    return new SigstoreBundle(
        hint, DsseEnvelope.sign(IntotoStatement.PAYLOAD_TYPE, statement.payload(), key, hint));
  }

  public ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("mediaType", MEDIA_TYPE);
    ObjectNode vm = o.putObject("verificationMaterial");
    vm.putObject("publicKey").put("hint", publicKeyHint);
    vm.putArray("tlogEntries");
    o.set("dsseEnvelope", envelope.toJson());
    return o;
  }

  /** Reads a bundle: the v0.3 media type, a public-key hint and a DSSE envelope, nothing else. */
  public static SigstoreBundle fromJson(JsonNode json) {
    JsonReader r = JsonReader.of(json, "bundle", JsonReader.RECORD).only(FIELDS);
    if (!MEDIA_TYPE.equals(r.string("mediaType"))) {
      throw new AttestException(
          "bundle.mediaType: expected " + MEDIA_TYPE + ", got " + r.string("mediaType"));
    }
    JsonReader vm = r.object("verificationMaterial", Set.of("publicKey", "tlogEntries"));
    String hint = vm.object("publicKey", Set.of("hint")).string("hint");
    if (!vm.list("tlogEntries", (n, p) -> n).isEmpty()) {
      throw new AttestException("bundle.verificationMaterial.tlogEntries: expected none");
    }
    return new SigstoreBundle(
        hint, DsseEnvelope.fromJson(r.required("dsseEnvelope"), "bundle.dsseEnvelope"));
  }

  /**
   * Checks the envelope's signature under {@code key} and that it carries an in-toto statement;
   * returns the statement.
   *
   * @throws AttestException naming what does not verify
   */
  public IntotoStatement verify(PublicKey key) {
    if (!IntotoStatement.PAYLOAD_TYPE.equals(envelope.payloadType())) {
      throw new AttestException(
          "bundle.dsseEnvelope.payloadType: expected "
              + IntotoStatement.PAYLOAD_TYPE
              + ", got "
              + envelope.payloadType());
    }
    if (envelope.verify(key) instanceof Verification.Invalid bad) {
      throw new AttestException("bundle." + bad.reason());
    }
    return IntotoStatement.fromJson(CanonicalJson.parse(envelope.payloadBytes()));
  }
}
