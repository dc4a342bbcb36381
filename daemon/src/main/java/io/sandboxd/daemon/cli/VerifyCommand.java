package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.EvidenceBundle;
import io.sandboxd.attest.ManifestEnvelope;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.SegmentChain;
import io.sandboxd.attest.Verification;
import io.sandboxd.daemon.SignerTrust;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `sandboxctl verify`: one envelope, or any mix of envelopes (a JSON array or JSON lines): every
 * signature, every run's segment chain, and the references between segments, receipts and
 * attestations, against the signer key(s) named with {@code --signer} (without one it refuses: a
 * key taken from the input proves only that someone signed it), which it prints. Exit 0 valid, 1
 * invalid (where and why on stderr), 2 unusable input or no key named.
 */
@Command(
    name = "verify",
    description =
        "Verify signed envelopes: each signature, every run's segment chain, and how segments,"
            + " receipts and attestations reference each other.")
final class VerifyCommand implements Callable<Integer> {
  @Parameters(arity = "0..1", paramLabel = "FILE|-", description = "Input (default: stdin).")
  String file;

  @Option(
      names = "--signer",
      paramLabel = "[ORIGIN=]HEX",
      description =
          "The node key you trust (required; repeat for a chain resumed on another host); with"
              + " ORIGIN= a node-log document must be of that log.")
  List<String> signer = new ArrayList<>();

  @Override
  public Integer call() {
    List<Envelope> envelopes;
    List<Labelled> manifests = new ArrayList<>();
    Set<PublicKey> expected = new LinkedHashSet<>();
    try {
      List<SignerTrust.Binding> bindings = new ArrayList<>();
      for (String s : signer) {
        SignerTrust.Binding b = SignerTrust.parse(s, "--signer");
        bindings.add(b);
        expected.add(b.key());
      }
      byte[] input = Input.read(file);
      Optional<Integer> log =
          LogVerification.verifyIfLog(input, expected, SignerTrust.of(bindings), Input.name(file));
      if (log.isPresent()) {
        return log.get();
      }
      // An in-toto export: its signature and statement first, then the evidence it carries.
      Optional<List<Envelope>> intoto;
      try {
        intoto = IntotoEvidence.envelopes(input, expected);
      } catch (AttestException e) {
        System.err.println("invalid at in-toto bundle: " + e.getMessage());
        return 1;
      }
      envelopes = intoto.isPresent() ? intoto.get() : read(input, manifests);
    } catch (AttestException | IOException e) {
      return Sandboxctl.unusable("verify", Input.name(file) + ": " + e.getMessage());
    }
    // JCP records are signed by their own principals (issuer, holder, agent; WIRE.md §2.11), not
    // the node: they are checked against the run's chain by their rules, not against --signer.
    List<Envelope> jcp = envelopes.stream().filter(VerifyCommand::isJcp).toList();
    if (!jcp.isEmpty() && jcp.size() < envelopes.size()) {
      envelopes = envelopes.stream().filter(e -> !isJcp(e)).toList();
    }
    Set<String> named = new LinkedHashSet<>();
    envelopes.forEach(e -> named.add(e.publicKey()));
    if (SignerPolicy.requiredAny(expected, "verify", Input.name(file), named).isEmpty()) {
      return Sandboxctl.UNUSABLE;
    }
    EvidenceBundle.Verdict verdict = EvidenceBundle.verify(envelopes, expected);
    String how = "--signer";
    if (verdict instanceof EvidenceBundle.Verdict.Invalid inv) {
      System.err.println("invalid at " + inv.where() + ": " + inv.reason());
      System.out.println("signer " + String.join(", ", inv.signers()) + " (" + how + ")");
      return 1;
    }
    EvidenceBundle.Verdict.Valid ok = (EvidenceBundle.Verdict.Valid) verdict;
    List<String> amended = new ArrayList<>();
    if (!jcp.isEmpty() && jcp != envelopes) {
      Optional<String> bad = JcpEvidence.check(envelopes, jcp, amended);
      if (bad.isPresent()) {
        System.err.println("invalid at " + bad.get());
        System.out.println("signer " + String.join(", ", ok.signers()) + " (" + how + ")");
        return 1;
      }
    }
    // A manifest's pinned label sits outside the signed core: it must match the core's image.
    for (Labelled m : manifests) {
      if (m.envelope().verify(Optional.empty()) instanceof Verification.Invalid inv) {
        System.err.println("invalid at item " + m.item() + ": " + inv.reason());
        System.out.println("signer " + String.join(", ", ok.signers()) + " (" + how + ")");
        return 1;
      }
    }
    if (envelopes.size() == 1 && ok.chains().isEmpty()) {
      Envelope only = envelopes.get(0);
      System.out.println("valid: " + only.schema().orElse("envelope") + " " + only.address());
    }
    for (Labelled m : manifests) {
      System.out.println(
          "manifest "
              + m.envelope().address()
              + (m.envelope().pinned() ? ": pinned" : ": unpinned (the image has no digest)"));
    }
    for (SegmentChain.Verdict.Valid c : ok.chains()) {
      System.out.println(
          "valid: chain of " + c.length() + " segment(s), run " + c.runId() + ", head " + c.head());
    }
    for (EvidenceBundle.RunTotal t : ok.totals()) {
      if (t.receiptsGiven() && (t.idleUj() > 0 || chainLength(ok, t.runId()) > 1)) {
        System.out.println(
            "run "
                + t.runId()
                + " total "
                + t.totalUj()
                + " uJ = receipts "
                + t.receiptsUj()
                + " + idle "
                + t.idleUj());
      }
    }
    amended.forEach(System.out::println);
    int loose = ok.receipts() + ok.attestations() + ok.others();
    if (envelopes.size() > 1 && loose > 0) {
      System.out.println(
          "valid: "
              + ok.receipts()
              + " receipt(s), "
              + ok.attestations()
              + " attestation(s) cross-checked, "
              + ok.others()
              + " other envelope(s)");
    }
    System.out.println("signer " + String.join(", ", ok.signers()) + " (" + how + ")");
    return 0;
  }

  private static boolean isJcp(Envelope e) {
    return e.schema().orElse("").startsWith("jcp.");
  }

  private static int chainLength(EvidenceBundle.Verdict.Valid ok, String runId) {
    return ok.chains().stream()
        .filter(c -> c.runId().equals(runId))
        .mapToInt(SegmentChain.Verdict.Valid::length)
        .findFirst()
        .orElse(0);
  }

  /** A manifest envelope and its place in the input. */
  record Labelled(int item, ManifestEnvelope envelope) {}

  /** One envelope, a JSON array of envelopes, or JSON lines of envelopes. */
  static List<Envelope> read(byte[] input) {
    return read(input, new ArrayList<>());
  }

  /**
   * As {@link #read(byte[])}; manifest envelopes (with their label) also go to {@code manifests}.
   */
  static List<Envelope> read(byte[] input, List<Labelled> manifests) {
    List<JsonNode> docs = new ArrayList<>();
    try {
      JsonNode whole = CanonicalJson.parse(input);
      if (whole.isArray()) {
        whole.forEach(docs::add);
      } else {
        docs.add(whole);
      }
    } catch (AttestException single) {
      String[] lines = new String(input, StandardCharsets.UTF_8).split("\n", -1);
      for (int i = 0; i < lines.length; i++) {
        if (lines[i].isBlank()) {
          continue;
        }
        try {
          docs.add(CanonicalJson.parse(lines[i]));
        } catch (AttestException e) {
          throw new AttestException("line " + (i + 1) + ": " + e.getMessage(), e);
        }
      }
      if (docs.size() < 2) {
        throw single;
      }
    }
    if (docs.isEmpty()) {
      throw new AttestException("no envelopes in input");
    }
    List<Envelope> out = new ArrayList<>();
    for (int i = 0; i < docs.size(); i++) {
      try {
        if (ManifestEnvelope.isManifestEnvelope(docs.get(i))) {
          ManifestEnvelope m = ManifestEnvelope.fromJson(docs.get(i));
          manifests.add(new Labelled(i, m));
          out.add(m.envelope());
        } else {
          out.add(Envelope.fromJson(docs.get(i)));
        }
      } catch (AttestException e) {
        throw new AttestException("item " + i + ": " + e.getMessage(), e);
      }
    }
    return out;
  }
}
