package io.sandboxd.daemon.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.KeyFile;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** canon, address, keygen and sign, through the real picocli command line. */
class OfflineCommandsTest extends FileInputs {
  /** The external vectors checked in under vectors/ at the repository root. */
  static final Path VECTORS =
      Path.of(System.getProperty("sandboxd.root", ".."), "vectors").toAbsolutePath().normalize();

  static final Path JCS = VECTORS.resolve("jcs");

  private static List<Path> jcsInputs() throws IOException {
    try (Stream<Path> s = Files.list(JCS.resolve("input"))) {
      List<Path> l = s.sorted().toList();
      assertFalse(l.isEmpty(), "no JCS vectors under " + JCS);
      return l;
    }
  }

  @Test
  void canonMatchesEveryJcsVectorByteForByte() throws IOException {
    for (Path in : jcsInputs()) {
      byte[] expected = Files.readAllBytes(JCS.resolve("output").resolve(in.getFileName()));
      Console.Result r = Console.run("canon", in.toString());
      assertEquals(0, r.exit(), in + ": " + r.stderr());
      assertArrayEquals(expected, r.stdout(), in.toString());
      assertEquals("", r.stderr());
    }
  }

  @Test
  void canonReadsStdinAndPrintsNoTrailingNewline() {
    Console.Result r =
        Console.runWithStdin(
            "{ \"b\" : [1, 2.0, true],\n \"a\" : \"x\" }\n".getBytes(StandardCharsets.UTF_8),
            "canon",
            "-");
    assertEquals(0, r.exit(), r.stderr());
    assertEquals("{\"a\":\"x\",\"b\":[1,2,true]}", r.out());
  }

  @Test
  void canonRefusesInvalidJsonWithExit2() throws IOException {
    Path dup = write("dup.json", "{\"a\":1,\"a\":2}");
    Console.Result d = Console.run("canon", dup.toString());
    assertEquals(2, d.exit());
    assertEquals(0, d.stdout().length);
    assertTrue(d.stderr().contains("dup.json"), d.stderr());

    Path broken = write("broken.json", "{\"a\":");
    assertEquals(2, Console.run("canon", broken.toString()).exit());

    Path badUtf8 = tmp.resolve("bad-utf8.json");
    Files.write(badUtf8, new byte[] {'"', (byte) 0xC3, (byte) 0x28, '"'});
    assertEquals(2, Console.run("canon", badUtf8.toString()).exit());

    assertEquals(2, Console.run("canon", tmp.resolve("absent.json").toString()).exit());
  }

  @Test
  void addressIsBlake3OfTheCanonicalBytes() throws IOException {
    for (Path in : jcsInputs()) {
      byte[] canonical = Files.readAllBytes(JCS.resolve("output").resolve(in.getFileName()));
      Console.Result r = Console.run("address", in.toString());
      assertEquals(0, r.exit(), r.stderr());
      assertEquals(Blake3.hex(canonical) + "\n", r.out(), in.toString());
      // The canonical output file hashed raw gives the same address.
      Path out = JCS.resolve("output").resolve(in.getFileName());
      assertEquals(r.out(), Console.run("address", "--raw", out.toString()).out());
    }
    Path spaced = write("spaced.json", "{ \"a\" : 1 }");
    assertNotEquals(
        Console.run("address", spaced.toString()).out(),
        Console.run("address", "--raw", spaced.toString()).out(),
        "--raw must hash the bytes as given");
    assertEquals(2, Console.run("address", write("bad.json", "{").toString()).exit());
  }

  @Test
  void addressRawMatchesTheOfficialBlake3Vectors() throws IOException {
    JsonNode vectors =
        CanonicalJson.mapper()
            .readTree(Files.readAllBytes(VECTORS.resolve("blake3/test_vectors.json")));
    int checked = 0;
    for (JsonNode c : vectors.get("cases")) {
      int len = c.get("input_len").intValue();
      if (len > 10_000) {
        continue;
      }
      byte[] input = new byte[len];
      for (int i = 0; i < len; i++) {
        input[i] = (byte) (i % 251);
      }
      Path f = tmp.resolve("in-" + len);
      Files.write(f, input);
      Console.Result r = Console.run("address", "--raw", f.toString());
      assertEquals(0, r.exit(), r.stderr());
      assertEquals(c.get("hash").textValue().substring(0, 64) + "\n", r.out(), "len " + len);
      checked++;
    }
    assertTrue(checked > 10, "checked " + checked);
  }

  @Test
  void keygenWritesAPrivateKeyAndPrintsItsPublicHex() throws IOException {
    Path key = tmp.resolve("keys/node.ed25519");
    Console.Result r = Console.run("keygen", "--out", key.toString());
    assertEquals(0, r.exit(), r.stderr());
    assertTrue(r.out().matches("[0-9a-f]{64}\n"), r.out());
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(key)));
    assertEquals(KeyFile.read(key).publicKey().hex() + "\n", r.out());

    // Never overwrites an existing key.
    byte[] before = Files.readAllBytes(key);
    Console.Result again = Console.run("keygen", "--out", key.toString());
    assertEquals(2, again.exit());
    assertArrayEquals(before, Files.readAllBytes(key));
    assertEquals(2, Console.run("keygen").exit(), "--out is required");
  }

  @Test
  void signWrapsTheDocumentAsASignedCore() throws IOException {
    Path key = tmp.resolve("k");
    String pub = Console.run("keygen", "--out", key.toString()).out().strip();
    Path doc = write("doc.json", "{\"z\":1, \"a\":[true,null]}");
    Console.Result r = Console.run("sign", "--key", key.toString(), doc.toString());
    assertEquals(0, r.exit(), r.stderr());
    Envelope env = Envelope.fromJson(CanonicalJson.parse(r.out().strip()));
    assertEquals(CanonicalJson.parse("{\"a\":[true,null],\"z\":1}"), env.core());
    assertEquals(pub, env.publicKey());
    assertEquals(
        Blake3.hex("{\"a\":[true,null],\"z\":1}".getBytes(StandardCharsets.UTF_8)), env.address());

    assertEquals(
        2,
        Console.run("sign", "--key", key.toString(), write("arr.json", "[1]").toString()).exit());
    assertEquals(
        2, Console.run("sign", "--key", tmp.resolve("nokey").toString(), doc.toString()).exit());
    Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-r--r--"));
    Console.Result loose = Console.run("sign", "--key", key.toString(), doc.toString());
    assertEquals(2, loose.exit(), "a world-readable key is refused");
    assertTrue(loose.stderr().contains("0600"), loose.stderr());
  }
}
