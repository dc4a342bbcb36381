package io.sandboxd.attest;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.ManifestRefusedException.Refusal;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The tool that makes vectors/env-manifest/vectors.json: inputs (JSONC as people write it),
 * canonical core bytes, addresses, pinned labels and signatures under a fixed key, and the fields
 * each refused input is refused for. {@code ManifestVectorsTest} regenerates and compares byte for
 * byte; run {@code main} (or that test with {@code -Dsandboxd.vectors.write=true}) to rewrite it.
 */
public final class ManifestVectors {
  /** The fixed test key: seed bytes 0x00..0x1f. */
  static final SigningKey KEY = SeededKeys.counting(0);

  private static final String D = "0123456789abcdef".repeat(4);

  private ManifestVectors() {}

  /** Accepted inputs, by name. */
  static Map<String, String> accepted() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("image-only", "{\"image\":\"ubuntu:24.04\"}");
    m.put(
        "image-only-jsonc", "\uFEFF// unpinned\n{\n  \"image\": \"ubuntu:24.04\", /* tag */\n}\n");
    m.put("pinned", "{\"image\":\"ubuntu@sha256:" + D + "\"}");
    m.put(
        "features",
        "{\"image\":\"i\",\"features\":{\"z/node:1\":{\"version\":\"20\",\"nvm\":true},"
            + "\"a/python:1\":\"3.12\",\"m/go:1\":{},\"n/n:1\":{\"k\":[1,{\"b\":2,\"a\":null}]}}}");
    m.put(
        "container-env",
        "{\"image\":\"i\",\"containerEnv\":{\"ZED\":\"z\",\"A\":\"é\",\"a\":\"\"}}");
    m.put(
        "mounts-string",
        "{\"image\":\"i\",\"mounts\":[\"type=volume,source=cache,target=/z\","
            + "\"src=/home/u,dst=/data,type=bind,consistency=cached\",\"type=tmpfs,destination=/t\"]}");
    m.put(
        "mounts-object",
        "{\"image\":\"i\",\"mounts\":[{\"type\":\"tmpfs\",\"target\":\"/t\"},"
            + "{\"source\":\"/home/u\",\"target\":\"/data\",\"type\":\"bind\"},"
            + "{\"type\":\"volume\",\"source\":\"cache\",\"target\":\"/z\",\"consistency\":\"delegated\"}]}");
    m.put(
        "excluded-fields",
        "{\"name\":\"n\",\"image\":\"i\",\"customizations\":{\"vscode\":{}},\"forwardPorts\":[3000],"
            + "\"appPort\":8080,\"portsAttributes\":{},\"otherPortsAttributes\":{},\"$schema\":\"s\","
            + "\"extensions\":[],\"settings\":{},\"waitFor\":\"x\",\"shutdownAction\":\"none\","
            + "\"userEnvProbe\":\"none\"}");
    m.put(
        "everything",
        "{\n  // a full declaration\n  \"remoteUser\": \"vscode\",\n"
            + "  \"mounts\": [\"type=tmpfs,target=/tmp/x\",],\n"
            + "  \"containerEnv\": {\"FOO\": \"bar\",},\n"
            + "  \"features\": {\"ghcr.io/devcontainers/features/node:1\": \"20\",},\n"
            + "  \"image\": \"mcr.microsoft.com/devcontainers/base@sha256:"
            + D
            + "\",\n}");
    return m;
  }

  /**
   * Fields the ingest refuses, and one it does not know, each a refused vector of its own;
   * DevcontainerIngestTest refuses these and more.
   */
  static final List<String> REFUSED_FIELDS =
      List.of(
          "initializeCommand",
          "onCreateCommand",
          "updateContentCommand",
          "postCreateCommand",
          "postStartCommand",
          "postAttachCommand",
          "build",
          "dockerFile",
          "dockerComposeFile",
          "runArgs",
          "privileged",
          "capAdd",
          "securityOpt",
          "workspaceFolder",
          "fooBar");

  /** Refused inputs, by name. */
  static Map<String, byte[]> refused() {
    Map<String, byte[]> m = new LinkedHashMap<>();
    for (String f : REFUSED_FIELDS) {
      m.put("field-" + f, utf8("{\"image\":\"i\",\"" + f + "\":\"x\"}"));
    }
    m.put(
        "every-field-named",
        utf8(
            "{\"image\":\"i\",\"postCreateCommand\":\"x\",\"runArgs\":[],\"privileged\":true,"
                + "\"fooBar\":1,\"containerEnv\":{\"N\":1},\"mounts\":[\"type=bind,source=/a,"
                + "target=/a,readonly\"],\"features\":{\"f\":1.5}}"));
    m.put("missing-image", utf8("{\"name\":\"n\"}"));
    m.put("container-env-not-string", utf8("{\"image\":\"i\",\"containerEnv\":{\"A\":true}}"));
    m.put(
        "mount-duplicate-target",
        utf8("{\"image\":\"i\",\"mounts\":[\"type=tmpfs,target=/t\",\"type=tmpfs,dst=/t\"]}"));
    m.put(
        "mount-unknown-key",
        utf8(
            "{\"image\":\"i\",\"mounts\":[{\"type\":\"tmpfs\",\"target\":\"/t\",\"size\":\"1\"}]}"));
    m.put("feature-id-not-a-string", utf8("{\"image\":\"i\",\"features\":[{\"id\":1}]}"));
    m.put("duplicate-key", utf8("{\"image\":\"a\",\"image\":\"b\"}"));
    m.put("top-level-array", utf8("[{\"image\":\"i\"}]"));
    m.put("too-deep", utf8("{\"image\":\"i\",\"name\":" + "[".repeat(65) + "]".repeat(65) + "}"));
    byte[] bad = utf8("{\"image\":\"i?\"}");
    bad[11] = (byte) 0xFF;
    m.put("invalid-utf8", bad);
    return m;
  }

  /** The vectors file's text. */
  static String generate() {
    ObjectNode root = CanonicalJson.mapper().createObjectNode();
    root.put(
        "description",
        "sandbox.env-manifest/1 vectors (WIRE.md 2.7): devcontainer.json inputs, canonical core"
            + " bytes, BLAKE3 addresses, pinned labels and Ed25519 signatures under the fixed key;"
            + " refused inputs list every field at fault. Generated by"
            + " attest/src/test/java/io/sandboxd/attest/ManifestVectors.java.");
    root.putObject("key")
        .put("seed", Hex.encode(SeededKeys.countingSeed(0)))
        .put("public_key", KEY.publicKey().hex());
    ArrayNode acc = root.putArray("accepted");
    for (Map.Entry<String, String> e : accepted().entrySet()) {
      EnvManifest m = DevcontainerIngest.ingest(utf8(e.getValue()));
      ManifestEnvelope env = ManifestEnvelope.sign(m, KEY);
      ObjectNode v = acc.addObject();
      v.put("name", e.getKey());
      v.put("input", e.getValue());
      v.put("core", new String(m.canonicalBytes(), StandardCharsets.UTF_8));
      v.put("address", env.address());
      v.put("pinned", env.pinned());
      v.put("signature", env.envelope().signature());
    }
    ArrayNode ref = root.putArray("refused");
    for (Map.Entry<String, byte[]> e : refused().entrySet()) {
      ObjectNode v = ref.addObject();
      v.put("name", e.getKey());
      String text = new String(e.getValue(), StandardCharsets.UTF_8);
      if (Arrays.equals(utf8(text), e.getValue())) {
        v.put("input", text);
      } else {
        v.put("input_hex", Hex.encode(e.getValue()));
      }
      ArrayNode fields = v.putArray("refused_fields");
      try {
        DevcontainerIngest.ingest(e.getValue());
        throw new IllegalStateException(e.getKey() + " was accepted");
      } catch (ManifestRefusedException x) {
        x.refusals().stream().map(Refusal::field).forEach(fields::add);
      }
    }
    return VectorFiles.text(root);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Writes the vectors file to {@code args[0]}. */
  public static void main(String[] args) throws IOException {
    VectorFiles.write(args, "vectors/env-manifest/vectors.json", generate());
  }
}
