package io.sandboxd.benchmarks;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.DevcontainerIngest;
import io.sandboxd.attest.EnvManifest;
import io.sandboxd.attest.Jsonc;
import io.sandboxd.attest.ManifestEnvelope;
import io.sandboxd.attest.SigningKey;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;

/**
 * devcontainer.json ingestion (issue 11): {@link DevcontainerIngest#ingest} of a typical 2 KB
 * document and of a 1 MB one, against the strict parse alone of the same bytes with the comments
 * already stripped (the baseline: what reading the JSON costs without classifying it), and with
 * signing added.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class ManifestIngestBench extends MicroBench {
  @Param({"2k", "1m"})
  public String size;

  private byte[] jsonc;
  private byte[] plain;
  private SigningKey key;

  @Setup
  public void setUp() {
    jsonc = document(size.equals("2k") ? 2_048 : 1 << 20);
    plain = Jsonc.toJson(jsonc);
    key = SigningKey.fromSeed(Blake3.hash(new byte[] {11}));
  }

  /** A typical document with comments and trailing commas, padded to about {@code bytes}. */
  static byte[] document(int bytes) {
    StringBuilder sb = new StringBuilder();
    sb.append("// A typical devcontainer.json\n{\n  \"name\": \"Node.js & TypeScript\",\n")
        .append("  \"image\": \"mcr.microsoft.com/devcontainers/typescript-node:1-20-bookworm\",\n")
        .append("  \"features\": {\n")
        .append("    \"ghcr.io/devcontainers/features/github-cli:1\": {},\n")
        .append("    \"ghcr.io/devcontainers/features/node:1\": \"20\", // shorthand\n")
        .append("    \"ghcr.io/devcontainers/features/docker-outside-of-docker:1\": ")
        .append("{\"moby\": true, \"installDockerBuildx\": true,},\n  },\n")
        .append("  \"mounts\": [\"type=volume,source=node_modules,target=/w/node_modules\",\n")
        .append("    {\"type\": \"tmpfs\", \"target\": \"/tmp/cache\"},],\n")
        .append("  \"forwardPorts\": [3000, 9229],\n  \"remoteUser\": \"node\",\n")
        .append("  \"containerEnv\": {\n    \"NODE_ENV\": \"development\",\n");
    int n = 0;
    // Half the padding is identity (variables), half is cosmetic (editor settings).
    int envBytes = bytes / 2;
    while (sb.length() < envBytes - 200) {
      sb.append("    \"VAR_").append(n).append("\": \"value-").append(n++).append("\",\n");
    }
    sb.append(
        "  },\n  /* editor settings */\n  \"customizations\": {\"vscode\": {\"settings\": {\n");
    while (sb.length() < bytes - 100) {
      sb.append("    \"ext.setting").append(n++).append("\": \"on\",\n");
    }
    sb.append("  }}},\n}\n");
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }

  /** Baseline: the strict parse of the same document without comments. */
  @Benchmark
  public Object strictParseOnly() {
    return CanonicalJson.parse(plain);
  }

  /** JSONC pre-pass + strict parse + classification + normalization into the core. */
  @Benchmark
  public EnvManifest ingest() {
    return DevcontainerIngest.ingest(jsonc);
  }

  /** Ingest, then canonical bytes, address and Ed25519 signature: what `manifest ingest` does. */
  @Benchmark
  public ManifestEnvelope ingestAndSign() {
    return ManifestEnvelope.sign(DevcontainerIngest.ingest(jsonc), key);
  }
}
