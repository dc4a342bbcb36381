package io.sandboxd.daemon.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.TestRecords;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** verify: exit 0 valid, 1 invalid (with the failing seq), 2 unusable input. */
class VerifyCommandTest extends FileInputs {

  private final SigningKey key = SigningKey.generate();

  /** A chain of {@code n} execute segments of one run, each linked to the previous core. */
  private List<Envelope> chain(int n, SigningKey signer) {
    return chain(n, signer, 0);
  }

  /** As above; {@code salt} varies the receipts so two chains differ from seq 0 on. */
  private List<Envelope> chain(int n, SigningKey signer, int salt) {
    List<Envelope> out = new ArrayList<>();
    String prev = null;
    for (int i = 0; i < n; i++) {
      Envelope e = segment(i, prev, Blake3.hex(new byte[] {(byte) i, (byte) salt}), signer);
      out.add(e);
      prev = e.address();
    }
    return out;
  }

  /** Execute segment {@code seq} of run-1 after {@code prev}, naming {@code receipt}, signed. */
  private static Envelope segment(int seq, String prev, String receipt, SigningKey signer) {
    RunSegment seg =
        TestRecords.execute(
            "run-1", seq, prev, "host-1", signer, Blake3.hex(new byte[] {1}), receipt, 1_000 + seq);
    return Envelope.sign(seg.toCore(), signer);
  }

  private static String lines(List<Envelope> envs) {
    return String.join("\n", envs.stream().map(Envelope::toJsonLine).toList()) + "\n";
  }

  private static String array(List<Envelope> envs) {
    return "[" + String.join(",", envs.stream().map(Envelope::toJsonLine).toList()) + "]";
  }

  /**
   * Each budget case of vectors/durable (issue 23 item 1) through `sandboxctl verify` offline,
   * trusting the keys the case lists: the consistent chain and the one ending at its breach verify
   * (exit 0); a cumulative figure that does not add up, a chain going on past its grant and a moved
   * chain checked without trusting the second host are invalid (exit 1), each naming why.
   */
  @Test
  void durableBudgetVectorsGetTheirVerdictsThroughTheCli() throws IOException {
    String root = System.getProperty("sandboxd.root");
    Path base = root != null && !root.isBlank() ? Path.of(root) : Path.of("..");
    com.fasterxml.jackson.databind.JsonNode vectors =
        CanonicalJson.parse(Files.readAllBytes(base.resolve("vectors/durable/durable.json")));
    int cases = 0;
    for (com.fasterxml.jackson.databind.JsonNode c : vectors.get("budget_cases")) {
      String name = c.get("name").textValue();
      List<String> args = new ArrayList<>();
      args.add("verify");
      args.add(write(name + ".json", c.get("envelopes").toString()).toString());
      c.get("trusted").forEach(k -> List.of("--signer", k.textValue()).forEach(args::add));
      Console.Result r = Console.run(args.toArray(String[]::new));
      com.fasterxml.jackson.databind.JsonNode want = c.get("verdict");
      if (want.get("valid").asBoolean()) {
        assertEquals(0, r.exit(), name + ": " + r.stderr());
      } else {
        assertEquals(1, r.exit(), name + ": " + r.out() + r.stderr());
        assertTrue(r.stderr().contains(want.get("kind").textValue()), name + ": " + r.stderr());
        assertTrue(r.stderr().contains("invalid at " + want.get("where").textValue()), r.stderr());
      }
      cases++;
    }
    assertEquals(5, cases);
  }

  @Test
  void signThenVerifyChecksTheSigner() throws IOException {
    Path k = tmp.resolve("k");
    String pub = Console.run("keygen", "--out", k.toString()).out().strip();
    Path doc = write("doc.json", "{\"hello\":\"world\"}");
    Path env = write("env.json", Console.run("sign", "--key", k.toString(), doc.toString()).out());

    // Issue 24: no key named, no verdict: the key the input names proves only that someone signed.
    Console.Result plain = Console.run("verify", env.toString());
    assertEquals(2, plain.exit(), plain.out());
    assertTrue(plain.stderr().contains("--signer"), plain.stderr());
    assertTrue(plain.stderr().contains("it is signed by " + pub), plain.stderr());
    assertFalse(plain.out().contains("valid"), plain.out());
    Console.Result named = Console.run("verify", env.toString(), "--signer", pub);
    assertEquals(0, named.exit(), named.stderr());
    assertTrue(named.out().startsWith("valid:"), named.out());
    assertTrue(named.out().contains("signer " + pub + " (--signer)"), named.out());

    String other = SigningKey.generate().publicKey().hex();
    Console.Result wrong = Console.run("verify", env.toString(), "--signer", other);
    assertEquals(1, wrong.exit());
    assertTrue(wrong.stderr().contains("expected signer " + other), wrong.stderr());

    assertEquals(2, Console.run("verify", env.toString(), "--signer", "abc").exit());
  }

  @Test
  void tamperedEnvelopeIsInvalid() throws IOException {
    Envelope e = Envelope.sign(Envelope.fromJson(chain(1, key).get(0).toJson()).core(), key);
    String tampered = e.toJsonLine().replace("\"at_ms\":1000", "\"at_ms\":1001");
    Console.Result r =
        Console.run(
            "verify", write("t.json", tampered).toString(), "--signer", key.publicKey().hex());
    assertEquals(1, r.exit());
    assertTrue(r.stderr().contains("address mismatch"), r.stderr());
  }

  @Test
  void chainVerifiesAsJsonArrayAndAsJsonLines() throws IOException {
    List<Envelope> c = chain(3, key);
    String head = c.get(2).address();
    for (String input : List.of(array(c), lines(c))) {
      Console.Result r =
          Console.run(
              "verify", write("c.json", input).toString(), "--signer", key.publicKey().hex());
      assertEquals(0, r.exit(), r.stderr());
      assertEquals(
          "valid: chain of 3 segment(s), run run-1, head "
              + head
              + "\nsigner "
              + key.publicKey().hex()
              + " (--signer)\n",
          r.out());
    }
    Console.Result stdin =
        Console.runWithStdin(
            lines(c).getBytes(StandardCharsets.UTF_8),
            "verify",
            "-",
            "--signer",
            key.publicKey().hex());
    assertEquals(0, stdin.exit(), stdin.stderr());
  }

  @Test
  void twoDifferentSegmentsAtOneSeqAreReportedAsAFork() throws IOException {
    List<Envelope> c = chain(3, key);
    com.fasterxml.jackson.databind.node.ObjectNode core =
        (com.fasterxml.jackson.databind.node.ObjectNode) c.get(1).core().deepCopy();
    core.put("at_ms", 5_000);
    List<Envelope> forked = new ArrayList<>(c);
    forked.add(Envelope.sign(core, key));
    Console.Result r = verify(forked);
    assertEquals(1, r.exit(), r.out());
    assertTrue(r.stderr().contains("invalid at seq 1 of run run-1: fork: "), r.stderr());
  }

  @Test
  void tamperedChainNamesTheFailingSeq() throws IOException {
    List<Envelope> c = chain(3, key);
    String edited =
        lines(c).replace("\"at_ms\":1001", "\"at_ms\":1999"); // segment 1's core, not re-signed
    Console.Result r =
        Console.run(
            "verify", write("c.jsonl", edited).toString(), "--signer", key.publicKey().hex());
    assertEquals(1, r.exit());
    assertTrue(r.stderr().contains("seq 1"), r.stderr());

    // Well signed, but linked past segment 1: the break is at seq 2.
    List<Envelope> other = chain(3, key, 7);
    List<Envelope> spliced = List.of(c.get(0), c.get(1), other.get(2));
    Console.Result s = verify(spliced);
    assertEquals(1, s.exit());
    assertTrue(s.stderr().contains("seq 2"), s.stderr());

    // Dropping a segment breaks the dense seq.
    Console.Result gap = verify(List.of(c.get(0), c.get(2)));
    assertEquals(1, gap.exit());
    assertTrue(gap.stderr().contains("seq 1"), gap.stderr());

    // Another key signed a consistent chain: the expected signer fails it at seq 0.
    Console.Result foreign = verify(chain(2, SigningKey.generate()));
    assertEquals(1, foreign.exit());
    assertTrue(foreign.stderr().contains("seq 0"), foreign.stderr());
  }

  private Envelope receipt(String runId, int salt, SigningKey signer) {
    Receipt r =
        new Receipt(
            runId,
            Blake3.hex(new byte[] {2}),
            Blake3.hex(new byte[] {1}),
            "S2",
            Map.of(DeviceClass.Cpu, new ClassEnergy(salt, Provenance.Estimator, "estimator", 1, 0)),
            0,
            List.of(),
            salt,
            0,
            1,
            Receipt.IoUse.NONE,
            Receipt.NetUse.NONE,
            1_000,
            1_001);
    return Envelope.sign(r.toCore(), signer);
  }

  private Envelope attestation(Envelope receipt, Outcome outcome, SigningKey signer) {
    Attestation a =
        TestRecords.attestation(
            signer,
            "host-1",
            Blake3.hex(new byte[] {1}),
            receipt.address(),
            Blake3.hex(new byte[] {2}),
            Blake3.hex(new byte[0]),
            outcome,
            1_002);
    return Envelope.sign(a.toCore(), signer);
  }

  /** A run of {@code n} execute segments, each naming its own receipt; receipts in the list. */
  private List<Envelope> run(int n, int salt, List<Envelope> receipts) {
    List<Envelope> out = new ArrayList<>();
    String prev = null;
    for (int i = 0; i < n; i++) {
      Envelope r = receipt("run-1", salt * 100 + i, key);
      receipts.add(r);
      Envelope e = segment(i, prev, r.address(), key);
      out.add(e);
      prev = e.address();
    }
    return out;
  }

  private Console.Result verify(List<Envelope> input, String... extra) throws IOException {
    List<String> args =
        new ArrayList<>(List.of("verify", write("m.jsonl", lines(input)).toString()));
    args.addAll(List.of(extra));
    if (!args.contains("--signer")) {
      args.addAll(List.of("--signer", key.publicKey().hex()));
    }
    return Console.run(args.toArray(new String[0]));
  }

  @Test
  void mixedInputNeverSkipsTheChainChecks() throws IOException {
    Random random = new Random(8L);
    List<Envelope> receipts = new ArrayList<>();
    List<Envelope> c = run(3, 0, receipts);
    List<Envelope> other = run(3, 7, new ArrayList<>());
    Envelope att = attestation(receipts.get(0), new Outcome.Completed(), key);
    List<List<Envelope>> broken =
        List.of(
            List.of(c.get(0), c.get(1), other.get(2)), // spliced
            List.of(c.get(0), c.get(2)), // seq gap
            List.of(c.get(1), c.get(2)), // no seq 0
            List.of(c.get(0), c.get(1), c.get(1), c.get(2))); // a seq twice
    for (List<Envelope> chain : broken) {
      for (int extra = 0; extra < 3; extra++) {
        List<Envelope> input = new ArrayList<>(chain);
        input.add(receipts.get(0));
        if (extra > 0) {
          input.add(att);
        }
        if (extra > 1) {
          input.add(Envelope.sign(CanonicalJson.parse("{\"hello\":1}"), key));
        }
        Collections.shuffle(input, random);
        for (String[] signer :
            List.of(new String[0], new String[] {"--signer", key.publicKey().hex()})) {
          Console.Result r = verify(input, signer);
          assertEquals(1, r.exit(), "seed 8: " + lines(input) + r.out() + r.stderr());
          assertTrue(r.out().contains("signer " + key.publicKey().hex()), r.out());
        }
      }
    }
    // The whole run, in any order, with its receipts and attestation: valid.
    List<Envelope> whole = new ArrayList<>(c);
    whole.addAll(receipts);
    whole.add(att);
    Collections.shuffle(whole, random);
    Console.Result ok = verify(whole);
    assertEquals(0, ok.exit(), ok.stderr());
    assertTrue(ok.out().contains("chain of 3 segment(s)"), ok.out());
    assertTrue(ok.out().contains("3 receipt(s), 1 attestation(s)"), ok.out());
    assertTrue(ok.out().endsWith("signer " + key.publicKey().hex() + " (--signer)\n"), ok.out());
  }

  @Test
  void referencesBetweenSegmentsReceiptsAndAttestationsMustMatch() throws IOException {
    List<Envelope> receipts = new ArrayList<>();
    List<Envelope> c = run(2, 0, receipts);
    // A receipt of the run that no segment names (a substituted receipt).
    Envelope stray = receipt("run-1", 55, key);
    Console.Result r1 =
        verify(List.of(c.get(0), c.get(1), receipts.get(0), receipts.get(1), stray));
    assertEquals(1, r1.exit());
    assertTrue(r1.stderr().contains("no segment of its chain names it"), r1.stderr());
    // A segment's receipt missing while the run's other receipt is given.
    Console.Result r2 = verify(List.of(c.get(0), c.get(1), receipts.get(1)));
    assertEquals(1, r2.exit());
    assertTrue(r2.stderr().contains("not given"), r2.stderr());
    // An attestation of a receipt that is not in the input.
    Console.Result r3 = verify(List.of(c.get(0), attestation(stray, new Outcome.Completed(), key)));
    assertEquals(1, r3.exit());
    assertTrue(r3.stderr().contains("neither among the given receipts"), r3.stderr());
    // Two attestations of one receipt that disagree (a rewritten outcome, re-signed elsewhere).
    Console.Result r4 =
        verify(
            List.of(
                receipts.get(0),
                attestation(receipts.get(0), new Outcome.Completed(), key),
                attestation(receipts.get(0), new Outcome.Failed("x"), key)));
    assertEquals(1, r4.exit());
    // Partly signed by a key not named: invalid.
    SigningKey other = SigningKey.generate();
    Console.Result r5 =
        verify(
            List.of(receipts.get(0), attestation(receipts.get(0), new Outcome.Completed(), other)));
    assertEquals(1, r5.exit());
    assertTrue(r5.out().contains("signer " + key.publicKey().hex()), r5.out());
    // A single envelope names the key it verified against.
    Console.Result pinned = verify(List.of(receipts.get(0)), "--signer", key.publicKey().hex());
    assertEquals(0, pinned.exit(), pinned.stderr());
    assertTrue(
        pinned.out().contains("signer " + key.publicKey().hex() + " (--signer)"), pinned.out());
  }

  @Test
  void garbageIsUnusable() throws IOException {
    for (String garbage :
        List.of(
            "this is not json",
            "",
            "[]",
            "{\"core\":{},\"address\":\"00\"}",
            "{\"core\":{\"a\":1},\"address\":\"x\",\"signature\":\"y\",\"public_key\":\"z\"}",
            lines(chain(2, key)) + "{not json}\n")) {
      Console.Result r = Console.run("verify", write("g.json", garbage).toString());
      assertEquals(2, r.exit(), "input: " + garbage + "\nstderr: " + r.stderr());
      assertTrue(r.stderr().startsWith("sandboxctl verify:"), r.stderr());
    }
    assertEquals(2, Console.run("verify", tmp.resolve("absent").toString()).exit());
  }
}
