package io.sandboxd.daemon.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** verify: exit 0 valid, 1 invalid (with the failing seq), 2 unusable input. */
class VerifyCommandTest {
  @TempDir Path tmp;

  private final SigningKey key = SigningKey.generate();

  private Path write(String name, String text) throws IOException {
    Path p = tmp.resolve(name);
    Files.writeString(p, text, StandardCharsets.UTF_8);
    return p;
  }

  /** A chain of {@code n} execute segments of one run, each linked to the previous core. */
  private List<Envelope> chain(int n, SigningKey signer) {
    return chain(n, signer, 0);
  }

  /** As above; {@code salt} varies the receipts so two chains differ from seq 0 on. */
  private List<Envelope> chain(int n, SigningKey signer, int salt) {
    List<Envelope> out = new ArrayList<>();
    String prev = null;
    for (int i = 0; i < n; i++) {
      RunSegment seg =
          new RunSegment(
              "run-1",
              i,
              RunSegment.Kind.execute,
              prev,
              "host-1",
              signer.publicKey().hex(),
              "S2",
              Blake3.hex(new byte[] {1}),
              Blake3.hex(new byte[] {(byte) i, (byte) salt}),
              null,
              0,
              Provenance.Estimator,
              1_000 + i);
      Envelope e = Envelope.sign(seg.toCore(), signer);
      out.add(e);
      prev = e.address();
    }
    return out;
  }

  private static String lines(List<Envelope> envs) {
    return String.join("\n", envs.stream().map(Envelope::toJsonLine).toList()) + "\n";
  }

  private static String array(List<Envelope> envs) {
    return "[" + String.join(",", envs.stream().map(Envelope::toJsonLine).toList()) + "]";
  }

  @Test
  void signThenVerifyChecksTheSigner() throws IOException {
    Path k = tmp.resolve("k");
    String pub = Console.run("keygen", "--out", k.toString()).out().strip();
    Path doc = write("doc.json", "{\"hello\":\"world\"}");
    Path env = write("env.json", Console.run("sign", "--key", k.toString(), doc.toString()).out());

    Console.Result plain = Console.run("verify", env.toString());
    assertEquals(0, plain.exit(), plain.stderr());
    assertTrue(plain.out().startsWith("valid:"), plain.out());
    assertEquals(0, Console.run("verify", env.toString(), "--signer", pub).exit());

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
    Console.Result r = Console.run("verify", write("t.json", tampered).toString());
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
      assertEquals("valid: chain of 3 segment(s), run run-1, head " + head + "\n", r.out());
    }
    Console.Result stdin =
        Console.runWithStdin(lines(c).getBytes(StandardCharsets.UTF_8), "verify", "-");
    assertEquals(0, stdin.exit(), stdin.stderr());
  }

  @Test
  void tamperedChainNamesTheFailingSeq() throws IOException {
    List<Envelope> c = chain(3, key);
    String edited =
        lines(c).replace("\"at_ms\":1001", "\"at_ms\":1999"); // segment 1's core, not re-signed
    Console.Result r = Console.run("verify", write("c.jsonl", edited).toString());
    assertEquals(1, r.exit());
    assertTrue(r.stderr().contains("seq 1"), r.stderr());

    // Well signed, but linked past segment 1: the break is at seq 2.
    List<Envelope> other = chain(3, key, 7);
    List<Envelope> spliced = List.of(c.get(0), c.get(1), other.get(2));
    Console.Result s = Console.run("verify", write("s.jsonl", lines(spliced)).toString());
    assertEquals(1, s.exit());
    assertTrue(s.stderr().contains("seq 2"), s.stderr());

    // Dropping a segment breaks the dense seq.
    Console.Result gap =
        Console.run("verify", write("g.jsonl", lines(List.of(c.get(0), c.get(2)))).toString());
    assertEquals(1, gap.exit());
    assertTrue(gap.stderr().contains("seq 1"), gap.stderr());

    // Another key signed a consistent chain: the expected signer fails it at seq 0.
    Console.Result foreign =
        Console.run(
            "verify",
            write("f.jsonl", lines(chain(2, SigningKey.generate()))).toString(),
            "--signer",
            key.publicKey().hex());
    assertEquals(1, foreign.exit());
    assertTrue(foreign.stderr().contains("seq 0"), foreign.stderr());
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
