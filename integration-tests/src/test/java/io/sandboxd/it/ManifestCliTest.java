package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged `sandboxctl manifest ingest|derive` on real-world-shaped devcontainer.json files
 * (test resources devcontainer/*.jsonc) and on the bad input of issue 11, in its own JVM.
 */
class ManifestCliTest {
  @TempDir Path tmp;

  private Path resource(String name) throws IOException {
    Path p = tmp.resolve(name);
    try (InputStream in = getClass().getResourceAsStream("/devcontainer/" + name)) {
      Files.write(p, in.readAllBytes());
    }
    return p;
  }

  private static List<String> removed(String stderr, String prefix) {
    List<String> out = new ArrayList<>();
    for (String line : stderr.split("\n")) {
      if (line.startsWith(prefix)) {
        out.add(line.substring(prefix.length(), line.indexOf(": ")));
      }
    }
    return out;
  }

  @Test
  void deriveThenIngestAdoptsTheSubsetInOneStep() throws Exception {
    Map<String, List<String>> expected = new LinkedHashMap<>();
    expected.put("node-web.jsonc", List.of("postCreateCommand"));
    expected.put("rust-pinned.jsonc", List.of("capAdd", "securityOpt"));
    for (Map.Entry<String, List<String>> e : expected.entrySet()) {
      Path doc = resource(e.getKey());
      DaemonProcess.Result refused =
          DaemonProcess.sandboxctl(null, "manifest", "ingest", doc.toString());
      assertEquals(2, refused.exit(), refused.err());
      for (String f : e.getValue()) {
        assertTrue(refused.err().contains("  " + f + ": "), f + " in " + refused.err());
      }
      DaemonProcess.Result d = DaemonProcess.sandboxctl(null, "manifest", "derive", doc.toString());
      assertEquals(0, d.exit(), d.err());
      assertEquals(e.getValue(), removed(d.err(), "removed "), e.getKey());
      Path derived = tmp.resolve("derived-" + e.getKey());
      Files.writeString(derived, d.out());
      DaemonProcess.Result in =
          DaemonProcess.sandboxctl(null, "manifest", "ingest", derived.toString());
      assertEquals(0, in.exit(), in.err());
      JsonNode env = CanonicalJson.parse(in.out().strip());
      assertEquals(e.getKey().startsWith("rust"), env.get("pinned").booleanValue());
      Path envFile = tmp.resolve("env-" + e.getKey());
      Files.writeString(envFile, in.out());
      DaemonProcess.Result v =
          DaemonProcess.sandboxctl(
              null, "verify", envFile.toString(), "--signer", env.get("public_key").textValue());
      assertEquals(0, v.exit(), v.err());
      assertTrue(v.out().contains(env.get("address").textValue()), v.out());
    }
  }

  @Test
  void documentsThatBuildTheirImageDeriveToAnImagelessDocumentAndExitTwo() throws Exception {
    DaemonProcess.Result py =
        DaemonProcess.sandboxctl(
            null, "manifest", "derive", resource("python-dockerfile.jsonc").toString());
    assertEquals(2, py.exit());
    assertEquals(
        List.of(
            "build",
            "containerEnv.WORKERS",
            "runArgs",
            "postCreateCommand",
            "postStartCommand",
            "workspaceFolder"),
        removed(py.err(), "removed "));
    assertEquals(List.of("image"), removed(py.err(), "unresolved "));
    JsonNode out = CanonicalJson.parse(py.out());
    assertEquals(2, out.get("mounts").size());
    assertEquals(2, out.get("containerEnv").size());

    DaemonProcess.Result compose =
        DaemonProcess.sandboxctl(
            null, "manifest", "derive", resource("compose-service.jsonc").toString());
    assertEquals(2, compose.exit());
    List<String> r = removed(compose.err(), "removed ");
    for (String hook :
        List.of(
            "initializeCommand", "onCreateCommand", "updateContentCommand", "postAttachCommand")) {
      assertTrue(r.contains(hook), hook + " in " + r);
    }
    assertTrue(r.contains("mounts[0].readonly") && r.contains("privileged"), r.toString());
    assertEquals(0, CanonicalJson.parse(compose.out()).get("mounts").size());
  }

  @Test
  void badInputIsExitTwoWithAClearReasonAndNoStackTrace() throws Exception {
    Map<String, byte[]> cases = new LinkedHashMap<>();
    cases.put(
        "deep",
        ("{\"image\":\"i\",\"name\":" + "[".repeat(50_000)).getBytes(StandardCharsets.UTF_8));
    cases.put(
        "huge-string",
        ("{\"image\":\"i\",\"name\":\"" + "x".repeat(6 << 20) + "\"}")
            .getBytes(StandardCharsets.UTF_8));
    byte[] utf8 = "{\"image\":\"i?\"}".getBytes(StandardCharsets.UTF_8);
    utf8[11] = (byte) 0xC0;
    cases.put("invalid-utf8", utf8);
    cases.put("array", "[{\"image\":\"i\"}]".getBytes(StandardCharsets.UTF_8));
    cases.put(
        "mount-key",
        "{\"image\":\"i\",\"mounts\":[\"type=bind,source=/a,target=/b,bogus=1\"]}"
            .getBytes(StandardCharsets.UTF_8));
    cases.put(
        "feature-id",
        "{\"image\":\"i\",\"features\":[{\"id\":7}]}".getBytes(StandardCharsets.UTF_8));
    Map<String, String> reason = new LinkedHashMap<>();
    reason.put("deep", "nested deeper than");
    reason.put("huge-string", "at most");
    reason.put("invalid-utf8", "invalid UTF-8 at byte 11");
    reason.put("array", "expected a JSON object at the top level");
    reason.put("mount-key", "mounts[0].bogus: ");
    reason.put("feature-id", "features: expected an object");
    for (Map.Entry<String, byte[]> c : cases.entrySet()) {
      Path f = tmp.resolve(c.getKey());
      Files.write(f, c.getValue());
      DaemonProcess.Result r = DaemonProcess.sandboxctl(null, "manifest", "ingest", f.toString());
      assertEquals(2, r.exit(), c.getKey() + ": " + r.err());
      assertEquals("", r.out(), c.getKey());
      assertTrue(r.err().contains(reason.get(c.getKey())), c.getKey() + ": " + r.err());
      assertFalse(r.err().contains("Exception"), c.getKey() + ": " + r.err());
    }
  }
}
