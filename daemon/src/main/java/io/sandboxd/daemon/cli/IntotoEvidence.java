package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.IntotoStatement;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.RunStatement;
import io.sandboxd.attest.SigstoreBundle;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * `sandboxctl verify` on a `runs export --intoto` file: the DSSE signature under a key given with
 * {@code --signer}, the statement by {@link RunStatement#check}, then the signed envelopes its
 * predicate carries (receipt, attestation, segment chain, JCP records), which verify checks as it
 * checks any evidence: the chain, and each amendment through the enforcer's AmendmentChain.
 */
final class IntotoEvidence {
  private IntotoEvidence() {}

  /**
   * The envelopes of {@code input} when it is a Sigstore bundle, checked as above; empty when it is
   * not one.
   *
   * @throws AttestException naming what does not verify
   */
  static Optional<List<Envelope>> envelopes(byte[] input, Set<PublicKey> signers) {
    JsonNode doc;
    try {
      doc = CanonicalJson.parse(input);
    } catch (AttestException notOneDocument) {
      return Optional.empty();
    }
    if (!doc.isObject() || !SigstoreBundle.MEDIA_TYPE.equals(doc.path("mediaType").asText())) {
      return Optional.empty();
    }
    SigstoreBundle bundle = SigstoreBundle.fromJson(doc);
    PublicKey key =
        signers.stream()
            .filter(k -> k.hex().equals(bundle.publicKeyHint()))
            .findFirst()
            .orElseThrow(
                () ->
                    new AttestException(
                        "bundle.verificationMaterial.publicKey.hint: "
                            + bundle.publicKeyHint()
                            + " is no --signer key"));
    IntotoStatement statement = bundle.verify(key);
    RunStatement.check(statement, key);
    JsonNode p = statement.predicate();
    List<Envelope> out = new ArrayList<>();
    out.add(Envelope.fromJson(p.get("receipt")));
    out.add(Envelope.fromJson(p.get("attestation")));
    for (String field : List.of("receipts", "segments", "jcp")) {
      p.path(field).forEach(e -> out.add(Envelope.fromJson(e)));
    }
    return Optional.of(out);
  }
}
