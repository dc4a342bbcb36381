package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.daemon.SignerTrust;
import io.sandboxd.daemon.fleet.FleetDocs;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.Set;

/**
 * `sandboxctl verify` for node-log documents: a C2SP checkpoint note, or a log inclusion or
 * consistency proof. They name no key, so the node's key must be given with {@code --signer}.
 */
final class LogVerification {
  private LogVerification() {}

  /** The exit status when {@code input} is a node-log document; empty when it is not one. */
  static Optional<Integer> verifyIfLog(
      byte[] input, Set<PublicKey> signers, SignerTrust trust, String name) {
    String text = new String(input, StandardCharsets.UTF_8);
    // A signed note has a signature line "— name sig"; nothing else sandboxctl reads does.
    boolean note = text.contains("\n\n\u2014 ");
    JsonNode doc = null;
    if (!note) {
      try {
        doc = CanonicalJson.parse(input);
      } catch (AttestException e) {
        return Optional.empty(); // JSON lines of envelopes, or unusable: the envelope path says
      }
      if (!FleetDocs.isProof(doc)) {
        return Optional.empty();
      }
    }
    Optional<PublicKey> named =
        SignerPolicy.required(
            signers, "verify", name + ": a node-log " + (note ? "checkpoint" : "proof"));
    if (named.isEmpty()) {
      return Optional.of(Sandboxctl.UNUSABLE);
    }
    PublicKey key = named.get();
    FleetDocs.Verdict v;
    try {
      v = note ? FleetDocs.verifyCheckpoint(text, key) : FleetDocs.verifyLog(doc, key);
    } catch (AttestException e) {
      System.err.println("sandboxctl verify: " + name + ": " + e.getMessage());
      return Optional.of(Sandboxctl.UNUSABLE);
    }
    if (v instanceof FleetDocs.Verdict.Valid) {
      // The log the document is of must be the key's, where the caller bound it to one.
      for (String origin : origins(text, doc)) {
        Optional<String> refused = trust.refusal(key.hex(), origin, name, false);
        if (refused.isPresent()) {
          v = new FleetDocs.Verdict.Invalid(refused.get());
          break;
        }
      }
    }
    if (v instanceof FleetDocs.Verdict.Invalid inv) {
      System.err.println("invalid: " + inv.why());
      SignerPolicy.printTrusted(key);
      return Optional.of(1);
    }
    System.out.println("valid: " + ((FleetDocs.Verdict.Valid) v).what());
    SignerPolicy.printTrusted(key);
    return Optional.of(0);
  }

  /** The origin lines of the checkpoint(s) a node-log document carries. */
  private static java.util.List<String> origins(String text, JsonNode doc) {
    if (doc == null) {
      return java.util.List.of(firstLine(text));
    }
    java.util.List<String> out = new java.util.ArrayList<>();
    for (String f : java.util.List.of("checkpoint", "old", "new")) {
      if (doc.path(f).isTextual()) {
        out.add(firstLine(doc.get(f).textValue()));
      }
    }
    return out;
  }

  private static String firstLine(String note) {
    int nl = note.indexOf('\n');
    return nl < 0 ? note : note.substring(0, nl);
  }
}
