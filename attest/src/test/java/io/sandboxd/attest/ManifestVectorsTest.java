package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** vectors/env-manifest/vectors.json is what the generator makes, and each vector holds. */
class ManifestVectorsTest {
  private static Path file() {
    return VectorFiles.dir("env-manifest").resolve("vectors.json");
  }

  @Test
  void thePublishedFileIsWhatTheGeneratorMakesByteForByte() throws IOException {
    VectorFiles.assertGenerated(file(), ManifestVectors.generate());
  }

  @Test
  void eachAcceptedVectorHoldsIndependentlyOfTheGenerator() throws IOException {
    JsonNode root = CanonicalJson.parse(Files.readAllBytes(file()));
    PublicKey pk = PublicKey.ofHex(root.get("key").get("public_key").textValue(), "public_key");
    assertEquals(ManifestVectors.KEY.publicKey(), pk);
    assertTrue(root.get("accepted").size() >= 8);
    for (JsonNode v : root.get("accepted")) {
      String name = v.get("name").textValue();
      byte[] core = v.get("core").textValue().getBytes(StandardCharsets.UTF_8);
      // The core is already canonical, hashes to the address, and the signature covers it.
      assertArrayEquals(core, CanonicalJson.canonicalize(core), name);
      assertEquals(Blake3.hex(core), v.get("address").textValue(), name);
      assertTrue(
          pk.verify(core, Hex.decode(v.get("signature").textValue(), 64, "signature")), name);
      EnvManifest m =
          DevcontainerIngest.ingest(v.get("input").textValue().getBytes(StandardCharsets.UTF_8));
      assertArrayEquals(core, m.canonicalBytes(), name);
      assertEquals(m.pinned(), v.get("pinned").booleanValue(), name);
    }
    assertEquals(address(root, "image-only"), address(root, "image-only-jsonc"));
    assertEquals(address(root, "mounts-string"), address(root, "mounts-object"));
    assertFalse(address(root, "image-only").equals(address(root, "pinned")));
  }

  @Test
  void eachRefusedVectorIsRefusedForExactlyItsFields() throws IOException {
    JsonNode root = CanonicalJson.parse(Files.readAllBytes(file()));
    for (JsonNode v : root.get("refused")) {
      byte[] input =
          v.has("input")
              ? v.get("input").textValue().getBytes(StandardCharsets.UTF_8)
              : Hex.decode(v.get("input_hex").textValue(), -1, "input_hex");
      List<String> expected = new ArrayList<>();
      v.get("refused_fields").forEach(f -> expected.add(f.textValue()));
      List<String> got =
          assertThrows(ManifestRefusedException.class, () -> DevcontainerIngest.ingest(input))
              .refusals()
              .stream()
              .map(ManifestRefusedException.Refusal::field)
              .toList();
      assertEquals(expected, got, v.get("name").textValue());
    }
  }

  private static String address(JsonNode root, String name) {
    for (JsonNode v : root.get("accepted")) {
      if (v.get("name").textValue().equals(name)) {
        return v.get("address").textValue();
      }
    }
    throw new AssertionError("no vector " + name);
  }
}
