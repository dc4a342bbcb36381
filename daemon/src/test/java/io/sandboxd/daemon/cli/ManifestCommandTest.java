package io.sandboxd.daemon.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.DevcontainerIngest;
import io.sandboxd.attest.KeyFile;
import io.sandboxd.attest.SigningKey;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** `sandboxctl manifest ingest|derive` and `verify` of a manifest envelope, in process. */
class ManifestCommandTest extends FileInputs {

  /** `sandboxctl manifest SUB` of a devcontainer.json holding {@code json}. */
  private Console.Result manifest(String sub, String json) throws IOException {
    return Console.run("manifest", sub, write("d.json", json).toString());
  }

  @Test
  void ingestPrintsTheSignedEnvelopeWithAddressAndPinnedAtTopLevel() throws IOException {
    SigningKey key = SigningKey.generate();
    Path k = tmp.resolve("k");
    KeyFile.write(k, key);
    Path doc = write("d.json", "{ // c\n \"image\": \"ubuntu:24.04\", \"name\": \"x\",\n}");
    Console.Result r = Console.run("manifest", "ingest", doc.toString(), "--key", k.toString());
    assertEquals(0, r.exit(), r.stderr());
    JsonNode env = CanonicalJson.parse(r.out().strip());
    java.util.Set<String> names = new java.util.HashSet<>();
    env.fieldNames().forEachRemaining(names::add);
    assertEquals(java.util.Set.of("core", "address", "pinned", "signature", "public_key"), names);
    assertFalse(env.get("pinned").booleanValue());
    assertEquals(key.publicKey().hex(), env.get("public_key").textValue());
    assertEquals(
        DevcontainerIngest.ingest(Files.readAllBytes(doc)).address(),
        env.get("address").textValue());
    assertTrue(r.stderr().contains("unpinned"), r.stderr());

    Path envFile = write("env.json", r.out());
    Console.Result v = Console.run("verify", envFile.toString(), "--signer", key.publicKey().hex());
    assertEquals(0, v.exit(), v.stderr());
    assertTrue(v.out().contains("valid: sandbox.env-manifest/1 " + env.get("address").textValue()));
    assertTrue(v.out().contains("unpinned"), v.out());

    ObjectNode lying = (ObjectNode) env.deepCopy();
    lying.put("pinned", true);
    Console.Result bad =
        Console.run(
            "verify",
            write("lie.json", lying.toString()).toString(),
            "--signer",
            key.publicKey().hex());
    assertEquals(1, bad.exit(), bad.out());
    assertTrue(bad.stderr().contains("pinned says true"), bad.stderr());
  }

  @Test
  void ingestWithoutAKeyNamesTheOneTimeKey() throws IOException {
    Console.Result r = manifest("ingest", "{\"image\":\"u@sha256:" + "ab".repeat(32) + "\"}");
    assertEquals(0, r.exit(), r.stderr());
    JsonNode env = CanonicalJson.parse(r.out().strip());
    assertTrue(env.get("pinned").booleanValue());
    assertTrue(r.stderr().contains("one-time key " + env.get("public_key").textValue()));
  }

  @Test
  void ingestRefusalExitsTwoNamingEveryField() throws IOException {
    Console.Result r =
        manifest(
            "ingest",
            "{\"image\":\"i\",\"postCreateCommand\":\"x\",\"runArgs\":[],\"fooBar\":1,"
                + "\"containerEnv\":{\"A\":1}}");
    assertEquals(2, r.exit());
    assertEquals("", r.out());
    for (String f : new String[] {"postCreateCommand", "runArgs", "fooBar", "containerEnv.A"}) {
      assertTrue(r.stderr().contains("\n  " + f + ": "), f + " in " + r.stderr());
    }
    assertTrue(r.stderr().contains("refused (4 field(s))"), r.stderr());
  }

  @Test
  void deriveRemovesRefusedFieldsAndExplainsEachOnStderr() throws IOException {
    Console.Result r =
        manifest(
            "derive",
            "{ /* x */ \"image\":\"i\",\"postCreateCommand\":\"x\",\"forwardPorts\":[1],"
                + "\"containerEnv\":{\"A\":1,\"B\":\"2\"},}");
    assertEquals(0, r.exit(), r.stderr());
    JsonNode out = CanonicalJson.parse(r.out());
    assertEquals(
        "{\"containerEnv\":{\"B\":\"2\"},\"forwardPorts\":[1],\"image\":\"i\"}",
        CanonicalJson.canonicalString(out));
    assertTrue(r.stderr().contains("removed postCreateCommand: "), r.stderr());
    assertTrue(r.stderr().contains("removed containerEnv.A: "), r.stderr());
    assertEquals(0, Console.run("manifest", "ingest", write("o.json", r.out()).toString()).exit());
  }

  @Test
  void deriveOfADocumentWithNoImageExitsTwoButPrintsWhatItCould() throws IOException {
    Console.Result r = manifest("derive", "{\"build\":{},\"name\":\"n\"}");
    assertEquals(2, r.exit());
    assertEquals("{\"name\":\"n\"}", CanonicalJson.canonicalString(CanonicalJson.parse(r.out())));
    assertTrue(r.stderr().contains("unresolved image"), r.stderr());
  }

  @Test
  void unreadableInputIsExitTwoWithoutAStackTrace() throws IOException {
    for (String text :
        new String[] {"[1]", "{\"image\":", "[".repeat(10_000), "{\"a\":1,\"a\":2}"}) {
      Path doc = write("bad.json", text);
      for (String sub : new String[] {"ingest", "derive"}) {
        Console.Result r = Console.run("manifest", sub, doc.toString());
        assertEquals(2, r.exit(), r.stderr());
        assertTrue(r.stderr().contains("document: "), r.stderr());
        assertFalse(r.stderr().contains("\tat "), r.stderr());
      }
    }
    Console.Result missing = Console.run("manifest", "ingest", tmp.resolve("nope").toString());
    assertEquals(2, missing.exit());
  }
}
