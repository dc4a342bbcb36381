package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.ManifestRefusedException.Refusal;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@code derive}: the largest accepted document, and what was removed from it and why. */
class DevcontainerDeriveTest {
  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void refusedFieldsAndEntriesAreRemovedAndTheRestKept() {
    String doc =
        "{ // a typical refused file\n"
            + "\"name\": \"dev\", \"image\": \"ubuntu:24.04\",\n"
            + "\"postCreateCommand\": \"npm ci\", \"runArgs\": [\"--cap-add=SYS_PTRACE\"],\n"
            + "\"containerEnv\": {\"OK\": \"1\", \"BAD\": 2},\n"
            + "\"mounts\": [\"type=bind,source=/a,target=/a,readonly\", \"type=tmpfs,target=/t\"],\n"
            + "\"forwardPorts\": [3000],\n}";
    DevcontainerIngest.Derivation d = DevcontainerIngest.derive(utf8(doc));
    assertTrue(d.accepted());
    assertEquals(
        List.of("postCreateCommand", "runArgs", "containerEnv.BAD", "mounts[0].readonly"),
        d.removed().stream().map(Refusal::field).toList());
    assertEquals(
        "{\"name\":\"dev\",\"image\":\"ubuntu:24.04\",\"containerEnv\":{\"OK\":\"1\"},"
            + "\"mounts\":[\"type=tmpfs,target=/t\"],\"forwardPorts\":[3000]}",
        d.document().toString());
    EnvManifest m = DevcontainerIngest.ingest(utf8(d.document().toString()));
    assertEquals(1, m.mounts().size());
  }

  @Test
  void aMissingImageIsUnresolvedAndTheDocumentIsStillPrinted() {
    DevcontainerIngest.Derivation d =
        DevcontainerIngest.derive(
            utf8("{\"build\":{\"dockerfile\":\"Dockerfile\"},\"name\":\"n\"}"));
    assertFalse(d.accepted());
    assertEquals(List.of("build"), d.removed().stream().map(Refusal::field).toList());
    assertEquals(List.of("image"), d.unresolved().stream().map(Refusal::field).toList());
    assertEquals("{\"name\":\"n\"}", d.document().toString());
  }

  @Test
  void aDerivedDocumentIsAlwaysAcceptedAndDerivingTwiceRemovesNothing() {
    long seed = 0xD371_4EL;
    Random rnd = new Random(seed);
    List<String> fields =
        List.of(
            "\"postStartCommand\":\"x\"",
            "\"privileged\":false",
            "\"fooBar\":{}",
            "\"name\":\"n\"",
            "\"forwardPorts\":[1]",
            "\"remoteUser\":3",
            "\"remoteUser\":\"u\"",
            "\"features\":{\"a\":\"1\",\"b\":2.5,\"c\":{\"x\":-1},\"d\":{}}",
            "\"features\":[]",
            "\"containerEnv\":{\"A\":\"1\",\"B\":false,\"=\":\"x\"}",
            "\"mounts\":[\"type=bind,source=/s,target=/m\",\"type=volume,source=v,target=/m\","
                + "{\"type\":\"tmpfs\",\"target\":\"/t\",\"size\":\"1\"},\"garbage\",7]",
            "\"workspaceFolder\":\"/w\"");
    for (int n = 0; n < 300; n++) {
      StringBuilder sb = new StringBuilder("{\"image\":\"i\"");
      java.util.Set<String> used = new java.util.HashSet<>();
      for (int k = 0; k < rnd.nextInt(6); k++) {
        String f = fields.get(rnd.nextInt(fields.size()));
        if (used.add(f.substring(0, f.indexOf(':')))) {
          sb.append(',').append(f);
        }
      }
      String doc = sb.append('}').toString();
      DevcontainerIngest.Derivation d = DevcontainerIngest.derive(utf8(doc));
      String where = "seed " + seed + " case " + n + ": " + doc;
      assertTrue(d.accepted(), where);
      byte[] derived = utf8(d.document().toString());
      DevcontainerIngest.ingest(derived);
      assertTrue(DevcontainerIngest.derive(derived).removed().isEmpty(), where);
      try {
        DevcontainerIngest.ingest(utf8(doc));
        assertTrue(d.removed().isEmpty(), where);
      } catch (ManifestRefusedException e) {
        assertEquals(e.refusals(), d.removed(), where);
      }
    }
  }
}
