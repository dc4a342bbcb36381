package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;

/**
 * A DSSE envelope (secure-systems-lab/dsse, JSON form): a typed payload and Ed25519 signatures over
 * its pre-authentication encoding. Payload and signatures are standard base64, as written.
 */
public record DsseEnvelope(String payloadType, String payload, List<DsseSignature> signatures) {

  /** One signature: an optional, unauthenticated key hint and the base64 signature. */
  public record DsseSignature(String keyid, String sig) {}

  public DsseEnvelope {
    signatures = List.copyOf(signatures);
  }

  /**
   * PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, where LEN is the byte
   * length in ASCII decimal: what is signed, so that the type cannot be swapped under a signature.
   */
  public static byte[] pae(String payloadType, byte[] body) {
    byte[] type = payloadType.getBytes(StandardCharsets.UTF_8);
    ByteArrayOutputStream out = new ByteArrayOutputStream(type.length + body.length + 32);
    out.writeBytes(("DSSEv1 " + type.length + " ").getBytes(StandardCharsets.US_ASCII));
    out.writeBytes(type);
    out.writeBytes((" " + body.length + " ").getBytes(StandardCharsets.US_ASCII));
    out.writeBytes(body);
    return out.toByteArray();
  }

  /**
   * Signs {@code body} as {@code payloadType} with one signature whose key hint is {@code keyid}.
   */
  public static DsseEnvelope sign(String payloadType, byte[] body, SigningKey key, String keyid) {
    byte[] sig = key.sign(pae(payloadType, body));
    return new DsseEnvelope(
        payloadType,
        Base64.getEncoder().encodeToString(body),
        List.of(new DsseSignature(keyid, Base64.getEncoder().encodeToString(sig))));
  }

  /** The payload bytes (DSSE allows standard or URL-safe base64; both are read). */
  public byte[] payloadBytes() {
    return decode(payload, "dsseEnvelope.payload");
  }

  /**
   * Valid iff exactly one signature is present and it verifies under {@code key} over PAE of this
   * type and payload (the key hint is not trusted, as DSSE requires).
   */
  public Verification verify(PublicKey key) {
    if (signatures.size() != 1) {
      return new Verification.Invalid(
          "dsseEnvelope.signatures: expected exactly one signature, got " + signatures.size());
    }
    byte[] body;
    byte[] sig;
    try {
      body = payloadBytes();
      sig = decode(signatures.get(0).sig(), "dsseEnvelope.signatures[0].sig");
    } catch (AttestException e) {
      return new Verification.Invalid(e.getMessage());
    }
    if (!key.verify(pae(payloadType, body), sig)) {
      return new Verification.Invalid(
          "dsseEnvelope.signatures[0]: does not verify under public key " + key.hex());
    }
    return new Verification.Valid();
  }

  public ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("payload", payload);
    o.put("payloadType", payloadType);
    var sigs = o.putArray("signatures");
    for (DsseSignature s : signatures) {
      ObjectNode so = sigs.addObject();
      if (s.keyid() != null && !s.keyid().isEmpty()) {
        so.put("keyid", s.keyid());
      }
      so.put("sig", s.sig());
    }
    return o;
  }

  /** Reads the JSON envelope; unknown fields are ignored, as the DSSE envelope spec requires. */
  public static DsseEnvelope fromJson(JsonNode json, String path) {
    JsonReader r = JsonReader.of(json, path, JsonReader.RECORD);
    String payload = r.string("payload");
    String type = r.string("payloadType");
    List<DsseSignature> sigs =
        r.list(
            "signatures",
            (n, p) -> {
              JsonReader s = JsonReader.of(n, p, JsonReader.RECORD);
              return new DsseSignature(s.string("keyid", ""), s.string("sig"));
            });
    if (r.optional("signatures").isEmpty()) {
      throw new AttestException(path + ".signatures: required");
    }
    return new DsseEnvelope(type, payload, sigs);
  }

  private static byte[] decode(String b64, String field) {
    try {
      return b64.indexOf('-') >= 0 || b64.indexOf('_') >= 0
          ? Base64.getUrlDecoder().decode(b64)
          : Base64.getDecoder().decode(b64);
    } catch (IllegalArgumentException e) {
      throw new AttestException(field + ": not base64: " + e.getMessage(), e);
    }
  }
}
