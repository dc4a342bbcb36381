package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SegmentChain;
import io.sandboxd.attest.Verification;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `sandboxctl verify`: one envelope, or segment envelopes (a JSON array or JSON lines) as one
 * chain. Exit 0 valid, 1 invalid (reason and failing seq on stderr), 2 unusable input.
 */
@Command(
    name = "verify",
    description = "Verify a signed envelope, or a run's segment envelopes as one chain.")
final class VerifyCommand implements Callable<Integer> {
  @Parameters(arity = "0..1", paramLabel = "FILE|-", description = "Input (default: stdin).")
  String file;

  @Option(names = "--signer", paramLabel = "HEX", description = "Expected signer public key.")
  String signer;

  @Override
  public Integer call() {
    List<Envelope> envelopes;
    Optional<PublicKey> expected;
    try {
      expected =
          signer == null ? Optional.empty() : Optional.of(PublicKey.ofHex(signer, "--signer"));
      envelopes = read(Input.read(file));
    } catch (AttestException | IOException e) {
      System.err.println("sandboxctl verify: " + Input.name(file) + ": " + e.getMessage());
      return Sandboxctl.UNUSABLE;
    }
    boolean allSegments =
        envelopes.stream().allMatch(e -> e.schema().filter(RunSegment.SCHEMA::equals).isPresent());
    if (allSegments) {
      SegmentChain.Verdict v = SegmentChain.verify(envelopes, expected);
      if (v instanceof SegmentChain.Verdict.Invalid inv) {
        System.err.println("invalid at seq " + inv.seq() + ": " + inv.reason());
        return 1;
      }
      SegmentChain.Verdict.Valid ok = (SegmentChain.Verdict.Valid) v;
      System.out.println(
          "valid: chain of "
              + ok.length()
              + " segment(s), run "
              + ok.runId()
              + ", head "
              + ok.head());
      return 0;
    }
    for (int i = 0; i < envelopes.size(); i++) {
      Verification v = envelopes.get(i).verify(expected);
      if (v instanceof Verification.Invalid inv) {
        System.err.println("invalid at item " + i + ": " + inv.reason());
        return 1;
      }
    }
    System.out.println(
        envelopes.size() == 1
            ? "valid: "
                + envelopes.get(0).schema().orElse("envelope")
                + " "
                + envelopes.get(0).address()
            : "valid: " + envelopes.size() + " envelopes");
    return 0;
  }

  /** One envelope, a JSON array of envelopes, or JSON lines of envelopes. */
  static List<Envelope> read(byte[] input) {
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
        out.add(Envelope.fromJson(docs.get(i)));
      } catch (AttestException e) {
        throw new AttestException("item " + i + ": " + e.getMessage(), e);
      }
    }
    return out;
  }
}
