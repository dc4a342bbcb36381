package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Iterator;
import java.util.Optional;
import java.util.Set;

/**
 * A signed environment manifest: the §2.0.4 envelope of an {@link EnvManifest} core plus the {@code
 * pinned} label at the top level, outside the core (WIRE.md §2.7). The label is not signed; a
 * verifier recomputes it from the core's image and refuses an envelope whose label disagrees.
 */
public record ManifestEnvelope(Envelope envelope, EnvManifest manifest, boolean pinned) {
  private static final Set<String> FIELDS =
      Set.of("core", "address", "signature", "public_key", "pinned");

  /** Signs {@code manifest}'s core; the label is what the image says. */
  public static ManifestEnvelope sign(EnvManifest manifest, SigningKey key) {
    return new ManifestEnvelope(Envelope.sign(manifest.toCore(), key), manifest, manifest.pinned());
  }

  /** True for a JSON object shaped like a manifest envelope (its core names the schema). */
  public static boolean isManifestEnvelope(JsonNode json) {
    JsonNode core = json == null ? null : json.get("core");
    JsonNode schema = core == null ? null : core.get("schema");
    return schema != null && EnvManifest.SCHEMA.equals(schema.textValue());
  }

  /**
   * Reads a manifest envelope strictly: exactly the five fields, a core in normal form, a boolean
   * label (checked against the core by {@link #verify}).
   */
  public static ManifestEnvelope fromJson(JsonNode json) {
    if (json == null || !json.isObject()) {
      throw new AttestException("envelope: expected a JSON object");
    }
    ObjectNode four = CanonicalJson.mapper().createObjectNode();
    for (Iterator<String> it = json.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!FIELDS.contains(f)) {
        throw new AttestException("envelope." + f + ": unknown field");
      }
      if (!f.equals("pinned")) {
        four.set(f, json.get(f));
      }
    }
    JsonNode pinned = json.get("pinned");
    if (pinned == null || !pinned.isBoolean()) {
      throw new AttestException("envelope.pinned: expected a boolean");
    }
    Envelope env = Envelope.fromJson(four);
    return new ManifestEnvelope(env, EnvManifest.fromCore(env.core()), pinned.booleanValue());
  }

  public String address() {
    return envelope.address();
  }

  /** The envelope's four fields and {@code pinned}. */
  public ObjectNode toJson() {
    ObjectNode o = envelope.toJson();
    o.put("pinned", pinned);
    return o;
  }

  /** Canonical JSON text of the whole envelope (one line). */
  public String toJsonLine() {
    return CanonicalJson.canonicalString(toJson());
  }

  /**
   * Address, signature, expected signer (as {@link Envelope#verify}), and the {@code pinned} label
   * against the core's image.
   */
  public Verification verify(Optional<PublicKey> expectedSigner) {
    Verification v = envelope.verify(expectedSigner);
    if (!v.isValid()) {
      return v;
    }
    if (pinned != manifest.pinned()) {
      return new Verification.Invalid(
          "pinned says "
              + pinned
              + " but image "
              + manifest.image()
              + (manifest.pinned() ? " carries" : " does not carry")
              + " a @sha256: digest");
    }
    return v;
  }
}
