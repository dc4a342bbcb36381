package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The signed envelope of WIRE.md §2.0.4: only {@code core} is hashed and signed; the address is
 * BLAKE3-256 of its canonical bytes and the signature Ed25519 over those same bytes.
 *
 * <p>A value: equal envelopes have equal members. {@link #core()} is the envelope's own tree, to
 * read and never to change: an envelope this node signed keeps the canonical text it signed, and
 * writes its line from that text instead of canonicalizing the core again.
 */
public final class Envelope {
  private static final Set<String> FIELDS = Set.of("core", "address", "signature", "public_key");

  private final JsonNode core;
  private final String address;
  private final String signature;
  private final String publicKey;
  // The core's canonical text, when known from signing (null otherwise), and the line written from
  // it once asked for: each a pure function of the members, so a racing second write is harmless.
  private final String canonicalCore;
  private String line;

  /** An envelope as read or built: the core is copied, so the caller's tree stays the caller's. */
  public Envelope(JsonNode core, String address, String signature, String publicKey) {
    this(core.deepCopy(), address, signature, publicKey, null);
  }

  private Envelope(
      JsonNode core, String address, String signature, String publicKey, String canonicalCore) {
    this.core = Objects.requireNonNull(core, "core");
    this.address = Objects.requireNonNull(address, "address");
    this.signature = Objects.requireNonNull(signature, "signature");
    this.publicKey = Objects.requireNonNull(publicKey, "publicKey");
    this.canonicalCore = canonicalCore;
  }

  /** Signs {@code core}: canonical bytes once, then address and signature from the same bytes. */
  public static Envelope sign(JsonNode core, SigningKey key) {
    String text = CanonicalJson.recordString(core);
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    byte[] address = Blake3.hash(bytes);
    byte[] signature = key.sign(bytes);
    // Made here, so valid: checking it again later (the store's seal, a read) needs no Ed25519.
    VerifiedSignatures.remember(key.publicKey().raw(), address, signature);
    return new Envelope(
        core.deepCopy(), Hex.encode(address), Hex.encode(signature), key.publicKey().hex(), text);
  }

  /** The signed core (the envelope's own tree: read it, do not change it). */
  public JsonNode core() {
    return core;
  }

  /**
   * The core's canonical text as {@link #sign} wrote it, whose BLAKE3 is {@link #address()}; empty
   * for an envelope read or built from parts, whose address is only a claim until verified.
   */
  public Optional<String> signedCoreText() {
    return Optional.ofNullable(canonicalCore);
  }

  /** BLAKE3-256 of the core's canonical bytes, lowercase hex. */
  public String address() {
    return address;
  }

  /** Ed25519 over the core's canonical bytes, lowercase hex. */
  public String signature() {
    return signature;
  }

  /** The signer's raw Ed25519 public key, lowercase hex. */
  public String publicKey() {
    return publicKey;
  }

  /**
   * Whether {@code signature} by the raw key {@code publicKey}, over the core whose canonical bytes
   * hash to {@code address}, is one this process made or has already verified, so that it needs no
   * Ed25519. The caller must have hashed the very bytes it holds to {@code address}: then true
   * means those bytes carry a valid signature. False only says this process does not know it (the
   * table is bounded); verify in full then.
   */
  public static boolean knownValid(byte[] publicKey, byte[] address, byte[] signature) {
    return VerifiedSignatures.known(publicKey, address, signature);
  }

  /** The address of a core, without signing (for {@code prev} links and references). */
  public static String addressOf(JsonNode core) {
    return Blake3.hex(CanonicalJson.canonicalize(core));
  }

  /**
   * Refuses {@code claimed} unless it is {@code doc}'s address; {@code field} names the claimed id
   * and {@code what} the document in the message.
   */
  static void requireAddress(JsonNode doc, String claimed, String field, String what) {
    String computed = addressOf(doc);
    if (!computed.equals(claimed)) {
      throw new AttestException(field + ": is " + claimed + ", " + what + " hash to " + computed);
    }
  }

  /** Reads an envelope strictly: exactly the four fields, lowercase hex of the right lengths. */
  public static Envelope fromJson(JsonNode json) {
    if (json == null || !json.isObject()) {
      throw new AttestException("envelope: expected a JSON object");
    }
    for (Iterator<String> it = json.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!FIELDS.contains(f)) {
        throw new AttestException("envelope." + f + ": unknown field");
      }
    }
    JsonNode core = json.get("core");
    if (core == null || !core.isObject()) {
      throw new AttestException("envelope.core: expected a JSON object");
    }
    String address = text(json, "address", 32);
    String signature = text(json, "signature", 64);
    String pk = text(json, "public_key", 32);
    return new Envelope(core, address, signature, pk);
  }

  private static String text(JsonNode json, String field, int bytes) {
    JsonNode n = json.get(field);
    if (n == null || !n.isTextual()) {
      throw new AttestException("envelope." + field + ": expected a string");
    }
    Hex.decode(n.textValue(), bytes, "envelope." + field);
    return n.textValue();
  }

  public ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.set("core", core.deepCopy());
    o.put("address", address);
    o.put("signature", signature);
    o.put("public_key", publicKey);
    return o;
  }

  /**
   * Canonical JSON text of the whole envelope (one line). Its three other members are hex, which
   * JCS writes as they are, and sort as address, core, public_key, signature: the line is the
   * core's canonical text between them, without copying the core into a wrapper to canonicalize it
   * (every stored record is written this way, on the submit path).
   */
  public String toJsonLine() {
    String l = line;
    if (l == null) {
      l = writeLine();
      line = l;
    }
    return l;
  }

  private String writeLine() {
    if (!isHex(address) || !isHex(signature) || !isHex(publicKey)) {
      return CanonicalJson.canonicalString(toJson());
    }
    String c = canonicalCore != null ? canonicalCore : CanonicalJson.canonicalString(core);
    StringBuilder b =
        new StringBuilder(
            c.length() + address.length() + signature.length() + publicKey.length() + 60);
    return b.append("{\"address\":\"")
        .append(address)
        .append("\",\"core\":")
        .append(c)
        .append(",\"public_key\":\"")
        .append(publicKey)
        .append("\",\"signature\":\"")
        .append(signature)
        .append("\"}")
        .toString();
  }

  private static boolean isHex(String s) {
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
        return false;
      }
    }
    return true;
  }

  /** The core's {@code schema}, or empty if it has none. */
  public Optional<String> schema() {
    JsonNode s = core.get("schema");
    return s != null && s.isTextual() ? Optional.of(s.textValue()) : Optional.empty();
  }

  /**
   * Recomputes the address, checks the signature and, when {@code expectedSigner} is given, that
   * the signer is that key.
   */
  public Verification verify(Optional<PublicKey> expectedSigner) {
    byte[] bytes;
    try {
      bytes = CanonicalJson.recordString(core).getBytes(StandardCharsets.UTF_8);
    } catch (AttestException e) {
      return new Verification.Invalid("core: " + e.getMessage());
    }
    byte[] hash = Blake3.hash(bytes);
    String recomputed = Hex.encode(hash);
    if (!recomputed.equals(address)) {
      return new Verification.Invalid(
          "address mismatch: envelope says " + address + ", core hashes to " + recomputed);
    }
    PublicKey signer;
    byte[] sig;
    try {
      // The expected signer's key is already decoded (a point decompression saved per check).
      signer =
          expectedSigner.isPresent() && expectedSigner.get().hex().equals(publicKey)
              ? expectedSigner.get()
              : PublicKey.ofHex(publicKey, "public_key");
      sig = Hex.decode(signature, 64, "signature");
    } catch (AttestException e) {
      return new Verification.Invalid(e.getMessage());
    }
    if (!VerifiedSignatures.verify(signer, hash, bytes, sig)) {
      return new Verification.Invalid("signature does not verify under public_key " + publicKey);
    }
    if (expectedSigner.isPresent() && !expectedSigner.get().equals(signer)) {
      return new Verification.Invalid(
          "signed by " + publicKey + ", expected signer " + expectedSigner.get().hex());
    }
    return new Verification.Valid();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Envelope e
        && core.equals(e.core)
        && address.equals(e.address)
        && signature.equals(e.signature)
        && publicKey.equals(e.publicKey);
  }

  @Override
  public int hashCode() {
    return Objects.hash(core, address, signature, publicKey);
  }

  @Override
  public String toString() {
    return "Envelope[core="
        + core
        + ", address="
        + address
        + ", signature="
        + signature
        + ", publicKey="
        + publicKey
        + "]";
  }
}
