package io.sandboxd.attest;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A run's evidence as an in-toto statement: subjects are the module and the run's outputs by digest
 * (BLAKE3 always, SHA-256 where the node still holds the bytes), the predicate carries the run's
 * signed receipt and attestation envelopes, so their cores verify on their own as well. A durable
 * run's predicate also carries its signed segment chain and, when it has any, its JCP records (mint
 * policy and child, checkpoints, amendments in the order applied: issue 23 item 4), so that a
 * verifier checks each amendment against the chain it amended.
 */
public final class RunStatement {
  /** The predicate type of a run's evidence. */
  public static final String PREDICATE_TYPE = "https://sandboxd.io/attestation/run/v1";

  public static final String MODULE = "module";
  public static final String STDOUT = "stdout";
  public static final String STDERR = "stderr";

  private static final Set<String> PREDICATE_FIELDS =
      Set.of("run_id", "receipt", "attestation", "segments", "receipts", "jcp");

  private RunStatement() {}

  /** What the node knows of one artifact: its BLAKE3 address and, if it holds them, its bytes. */
  public record Artifact(String name, String blake3, Optional<byte[]> bytes) {
    public Artifact {
      Hex.decode(blake3, 32, name + ".blake3");
      if (bytes.isPresent() && !Blake3.hex(bytes.get()).equals(blake3)) {
        throw new AttestException(name + ": the bytes do not hash to " + blake3);
      }
    }

    IntotoStatement.Subject subject() {
      Map<String, String> digest = new HashMap<>();
      digest.put("blake3", blake3);
      bytes.ifPresent(b -> digest.put("sha256", sha256(b)));
      return new IntotoStatement.Subject(name, digest);
    }
  }

  /**
   * The statement for one run. {@code module} is the unit's artifact, {@code stdout}/{@code stderr}
   * are present exactly when the attestation names outputs.
   */
  public static IntotoStatement of(
      String runId,
      Envelope receipt,
      Envelope attestation,
      Artifact module,
      Optional<Artifact> stdout,
      Optional<Artifact> stderr) {
    return of(runId, receipt, attestation, module, stdout, stderr, List.of(), List.of(), List.of());
  }

  /** Puts {@code envelopes} under {@code key}, or nothing when there are none (older bytes). */
  private static void putUnlessEmpty(ObjectNode o, String key, List<Envelope> envelopes) {
    if (!envelopes.isEmpty()) {
      var a = o.putArray(key);
      envelopes.forEach(e -> a.add(e.toJson()));
    }
  }

  /**
   * As above, for a durable run: its {@code segments} in seq order, {@code receipts} (those of its
   * earlier execute segments, so the chain checks whole) and its JCP records {@code jcp} (each
   * omitted from the predicate when empty).
   */
  public static IntotoStatement of(
      String runId,
      Envelope receipt,
      Envelope attestation,
      Artifact module,
      Optional<Artifact> stdout,
      Optional<Artifact> stderr,
      List<Envelope> segments,
      List<Envelope> receipts,
      List<Envelope> jcp) {
    List<IntotoStatement.Subject> subjects = new ArrayList<>();
    subjects.add(module.subject());
    stdout.ifPresent(a -> subjects.add(a.subject()));
    stderr.ifPresent(a -> subjects.add(a.subject()));
    ObjectNode predicate = CanonicalJson.mapper().createObjectNode();
    predicate.put("run_id", runId);
    predicate.set("receipt", receipt.toJson());
    predicate.set("attestation", attestation.toJson());
    putUnlessEmpty(predicate, "segments", segments);
    putUnlessEmpty(predicate, "receipts", receipts);
    putUnlessEmpty(predicate, "jcp", jcp);
    IntotoStatement s = new IntotoStatement(subjects, PREDICATE_TYPE, predicate);
    check(s, PublicKey.ofHex(attestation.publicKey(), "attestation.public_key"));
    return s;
  }

  /**
   * Checks a statement of this predicate type against the node key: both envelopes verify under
   * {@code node}, the attestation names that receipt, and the subjects are exactly the module and
   * the outputs the attestation names, with the same BLAKE3 addresses. With {@code segments}: they
   * form a valid chain of this run ending in the execute segment of that receipt. With {@code jcp}
   * (which needs {@code segments}): its amendments are, in order, those the attestation names.
   * Whether each amendment is issuer-signed and only tightens is decided beside the chain by the
   * enforcer's AmendmentChain (`sandboxctl verify` on the file).
   *
   * @return the run id
   * @throws AttestException naming the first thing that does not hold
   */
  public static String check(IntotoStatement s, PublicKey node) {
    if (!PREDICATE_TYPE.equals(s.predicateType())) {
      throw new AttestException(
          "statement.predicateType: expected " + PREDICATE_TYPE + ", got " + s.predicateType());
    }
    JsonReader p =
        JsonReader.of(s.predicate(), "statement.predicate", JsonReader.RECORD)
            .only(PREDICATE_FIELDS);
    Envelope receipt = Envelope.fromJson(p.required("receipt"));
    Envelope attestation = Envelope.fromJson(p.required("attestation"));
    for (var e : List.of(Map.entry("receipt", receipt), Map.entry("attestation", attestation))) {
      if (e.getValue().verify(Optional.of(node)) instanceof Verification.Invalid bad) {
        throw new AttestException("statement.predicate." + e.getKey() + ": " + bad.reason());
      }
    }
    Receipt.fromCore(receipt.core());
    Attestation a = Attestation.fromCore(attestation.core());
    if (!a.receipt().equals(receipt.address())) {
      throw new AttestException(
          "statement.predicate.attestation: names receipt "
              + a.receipt()
              + ", the predicate's receipt is "
              + receipt.address());
    }
    Map<String, String> expected = new HashMap<>();
    expected.put(MODULE, a.unit());
    if (a.outputs() != null) {
      expected.put(STDOUT, a.outputs().stdout().address());
      expected.put(STDERR, a.outputs().stderr().address());
    }
    Map<String, String> named = new HashMap<>();
    for (IntotoStatement.Subject sub : s.subjects()) {
      String b3 = sub.digest().get("blake3");
      if (!expected.containsKey(sub.name())) {
        throw new AttestException(
            "statement.subject " + sub.name() + ": not an artifact of the run");
      }
      if (!expected.get(sub.name()).equals(b3)) {
        throw new AttestException(
            "statement.subject "
                + sub.name()
                + ": blake3 "
                + b3
                + ", the attestation names "
                + expected.get(sub.name()));
      }
      named.put(sub.name(), b3);
    }
    if (!named.keySet().equals(expected.keySet())) {
      throw new AttestException(
          "statement.subject: expected " + expected.keySet() + ", got " + named.keySet());
    }
    String runId = p.string("run_id");
    List<Envelope> segments = p.list("segments", (n, at) -> envelope(n, at));
    List<Envelope> jcp = p.list("jcp", (n, at) -> envelope(n, at));
    List<Envelope> earlier = p.list("receipts", (n, at) -> envelope(n, at));
    for (int i = 0; i < earlier.size(); i++) {
      if (earlier.get(i).verify(Optional.empty()) instanceof Verification.Invalid bad) {
        throw new AttestException("statement.predicate.receipts[" + i + "]: " + bad.reason());
      }
      Receipt.fromCore(earlier.get(i).core());
    }
    if (!earlier.isEmpty() && segments.isEmpty()) {
      throw new AttestException(
          "statement.predicate.receipts: earlier receipts without the run's segments");
    }
    if (!segments.isEmpty()) {
      checkChain(runId, segments, receipt);
    } else if (!jcp.isEmpty()) {
      throw new AttestException(
          "statement.predicate.jcp: JCP records without the run's segments to check them against");
    }
    List<String> amendments = new ArrayList<>();
    for (Envelope e : jcp) {
      if (e.schema().orElse("").equals(JcpAmendment.SCHEMA)) {
        amendments.add(e.address());
      }
    }
    List<String> attested = a.jcp() == null ? List.of() : a.jcp().amendments();
    if (!attested.equals(amendments)) {
      throw new AttestException(
          "statement.predicate.jcp: amendments "
              + amendments
              + ", the attestation names "
              + attested);
    }
    return runId;
  }

  private static Envelope envelope(com.fasterxml.jackson.databind.JsonNode n, String at) {
    try {
      return Envelope.fromJson(n);
    } catch (AttestException e) {
      throw new AttestException(at + ": " + e.getMessage(), e);
    }
  }

  private static void checkChain(String runId, List<Envelope> segments, Envelope receipt) {
    if (SegmentChain.verify(segments, Optional.empty()) instanceof SegmentChain.Verdict.Invalid i) {
      throw new AttestException(
          "statement.predicate.segments: invalid at position " + i.seq() + ": " + i.reason());
    }
    RunSegment last = RunSegment.fromCore(segments.get(segments.size() - 1).core());
    if (!last.runId().equals(runId)) {
      throw new AttestException(
          "statement.predicate.segments: of run " + last.runId() + ", the predicate's is " + runId);
    }
    if (last.kind() != RunSegment.Kind.execute || !receipt.address().equals(last.receipt())) {
      throw new AttestException(
          "statement.predicate.segments: the chain ends in "
              + last.kind()
              + " segment "
              + last.seq()
              + ", not the execute segment of the predicate's receipt "
              + receipt.address());
    }
  }

  /** Lowercase hex SHA-256. */
  public static String sha256(byte[] bytes) {
    try {
      return Hex.encode(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }
}
