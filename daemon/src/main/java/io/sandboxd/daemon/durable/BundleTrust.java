package io.sandboxd.daemon.durable;

import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.Verification;
import io.sandboxd.daemon.SignerTrust;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Which run bundles this node takes in (issue 23): a sealed bundle's seal must be valid, signed by
 * the node that signed the run's last segment, cover every field as it arrived and, when it names a
 * destination, name this node; with {@code trusted_nodes} configured, a bundle must be sealed and
 * every key on it (segments, records, seal) must be this node's or a trusted one. Each refusal
 * names the field or the key.
 */
public final class BundleTrust {
  /** Seals with no key and checks seals only (embedding and unit tests). */
  static final BundleTrust NONE = new BundleTrust(null, Set.of());

  private final SigningKey key;
  // The same rule as sandboxctl's offline checks (SignerTrust): only named keys count.
  private final SignerTrust trusted;

  /** {@code key} seals exports and is this node; {@code trusted} are the other nodes' keys. */
  public BundleTrust(SigningKey key, Set<String> trusted) {
    this.key = key;
    this.trusted = SignerTrust.ofKeys(trusted);
  }

  /** {@code b} sealed by this node for {@code destination} ("" for any node). */
  RunBundle seal(RunBundle b, String destination) {
    if (!destination.isEmpty()) {
      try {
        PublicKey.ofHex(destination, "destination_key");
      } catch (RuntimeException e) {
        throw new DurableRunException.Refused("destination_key: " + e.getMessage(), e);
      }
    }
    return key == null ? b : BundleSeal.seal(b, key, destination);
  }

  /** Refuses {@code b} unless it may be imported here; see the class comment. */
  void check(RunBundle b) {
    Optional<Envelope> seal = b.seal();
    if (seal.isEmpty()) {
      if (!trusted.isEmpty()) {
        throw new DurableRunException.BadBundle(
            "seal: missing; with trusted_nodes configured only a bundle sealed by a trusted node"
                + " is imported");
      }
      return;
    }
    Envelope s = seal.get();
    if (!s.schema().orElse("").equals(BundleSeal.SCHEMA)) {
      throw new DurableRunException.BadBundle("seal: not a " + BundleSeal.SCHEMA);
    }
    if (s.verify(Optional.empty()) instanceof Verification.Invalid inv) {
      throw new DurableRunException.BadBundle("seal: " + inv.reason());
    }
    Envelope last = b.segments().get(b.segments().size() - 1);
    if (!s.publicKey().equals(last.publicKey())) {
      throw new DurableRunException.BadBundle(
          "seal: signed by node key "
              + s.publicKey()
              + ", the run's last segment by "
              + last.publicKey());
    }
    String field = BundleSeal.mismatch(b, s);
    if (field != null) {
      throw new DurableRunException.BadBundle(
          field + ": differs from what the exporting node sealed (edited in transit)");
    }
    String destination = s.core().path("destination").asText("");
    if (key != null && !destination.isEmpty() && !destination.equals(key.publicKey().hex())) {
      throw new DurableRunException.BadBundle(
          "destination: the bundle is for node key "
              + destination
              + ", this node is "
              + key.publicKey().hex());
    }
    if (trusted.isEmpty()) {
      return;
    }
    List<Envelope> signed = new ArrayList<>(b.segments());
    signed.addAll(b.records());
    signed.add(s);
    for (Envelope e : signed) {
      String k = e.publicKey();
      if (!trusted.trusts(k) && (key == null || !k.equals(key.publicKey().hex()))) {
        throw new DurableRunException.BadBundle(
            "signer: node key "
                + k
                + " ("
                + e.schema().orElse("record")
                + " "
                + e.address()
                + ") is not in durable.trusted_nodes");
      }
    }
  }
}
