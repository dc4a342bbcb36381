package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.EnvManifest.Kind;
import io.sandboxd.attest.EnvManifest.Mount;
import io.sandboxd.attest.ManifestRefusedException.Refusal;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Ingestion of devcontainer.json into the manifest core (WIRE.md §2.7, §5 checks 17 and 18). */
class DevcontainerIngestTest {
  static final String DIGEST = "0123456789abcdef".repeat(4);

  static EnvManifest ingest(String jsonc) {
    return DevcontainerIngest.ingest(jsonc.getBytes(StandardCharsets.UTF_8));
  }

  static List<Refusal> refusals(String jsonc) {
    return assertThrows(ManifestRefusedException.class, () -> ingest(jsonc)).refusals();
  }

  static List<String> fields(String jsonc) {
    return refusals(jsonc).stream().map(Refusal::field).toList();
  }

  static String core(EnvManifest m) {
    return new String(m.canonicalBytes(), StandardCharsets.UTF_8);
  }

  // ------------------------------------------------------------ accepted fields

  @Test
  void imageAloneMakesTheSmallestCore() {
    EnvManifest m = ingest("{\"image\":\"ubuntu:24.04\"}");
    assertEquals(
        "{\"container_env\":{},\"features\":[],\"image\":\"ubuntu:24.04\",\"mounts\":[],"
            + "\"remote_user\":null,\"schema\":\"sandbox.env-manifest/1\"}",
        core(m));
    assertEquals(Blake3.hex(m.canonicalBytes()), m.address());
  }

  @Test
  void pinnedIffTheImageCarriesASha256Digest() {
    assertFalse(ingest("{\"image\":\"ubuntu:24.04\"}").pinned());
    assertTrue(ingest("{\"image\":\"ubuntu@sha256:" + DIGEST + "\"}").pinned());
    assertTrue(ingest("{\"image\":\"ghcr.io/x/y:1@sha256:" + DIGEST + "\"}").pinned());
    // Short, uppercase, or another algorithm: not a digest this manifest can stand on.
    assertFalse(ingest("{\"image\":\"ubuntu@sha256:" + DIGEST.substring(1) + "\"}").pinned());
    assertFalse(
        ingest("{\"image\":\"ubuntu@sha256:" + DIGEST.toUpperCase(java.util.Locale.ROOT) + "\"}")
            .pinned());
    assertFalse(ingest("{\"image\":\"ubuntu@sha512:" + DIGEST + DIGEST + "\"}").pinned());
    assertFalse(ingest("{\"image\":\"ubuntu@sha256:" + DIGEST + "0\"}").pinned());
  }

  @Test
  void featuresAreSortedByIdAndTheStringShorthandIsAVersion() {
    EnvManifest m =
        ingest(
            "{\"image\":\"i\",\"features\":{\"z/node:1\":{\"version\":\"20\",\"nvm\":true},"
                + "\"a/python:1\":\"3.12\",\"m/go:1\":{}}}");
    assertEquals(
        List.of("a/python:1", "m/go:1", "z/node:1"),
        m.features().stream().map(EnvManifest.Feature::id).toList());
    assertTrue(
        core(m)
            .contains(
                "\"features\":[{\"id\":\"a/python:1\",\"options\":{\"version\":\"3.12\"}},"
                    + "{\"id\":\"m/go:1\",\"options\":{}},"
                    + "{\"id\":\"z/node:1\",\"options\":{\"nvm\":true,\"version\":\"20\"}}]"),
        core(m));
    // The shorthand and its long form are one identity.
    assertEquals(
        ingest("{\"image\":\"i\",\"features\":{\"a\":\"1\"}}").address(),
        ingest("{\"image\":\"i\",\"features\":{\"a\":{\"version\":\"1\"}}}").address());
  }

  @Test
  void containerEnvIsSortedAndChangingAValueChangesTheAddress() {
    EnvManifest m = ingest("{\"image\":\"i\",\"containerEnv\":{\"B\":\"2\",\"A\":\"1\"}}");
    assertEquals(List.of("A", "B"), List.copyOf(m.containerEnv().keySet()));
    assertTrue(core(m).contains("\"container_env\":{\"A\":\"1\",\"B\":\"2\"}"), core(m));
    assertNotEquals(
        m.address(),
        ingest("{\"image\":\"i\",\"containerEnv\":{\"B\":\"2\",\"A\":\"x\"}}").address());
  }

  @Test
  void remoteUserIsIdentity() {
    EnvManifest m = ingest("{\"image\":\"i\",\"remoteUser\":\"vscode\"}");
    assertEquals("vscode", m.remoteUser());
    assertTrue(core(m).contains("\"remote_user\":\"vscode\""));
    assertNotEquals(m.address(), ingest("{\"image\":\"i\"}").address());
    // An explicit null is the same as absent (WIRE.md §2.0.6).
    assertEquals(
        ingest("{\"image\":\"i\"}").address(),
        ingest("{\"image\":\"i\",\"remoteUser\":null,\"features\":null}").address());
  }

  @Test
  void mountsInStringAndObjectFormNormalizeAlikeAndSortByTarget() {
    EnvManifest s =
        ingest(
            "{\"image\":\"i\",\"mounts\":["
                + "\"type=volume,source=cache,target=/z/cache\","
                + "\"src=/home/u/data,dst=/data,type=bind,consistency=cached\","
                + "\"type=tmpfs,destination=/tmp/scratch\"]}");
    EnvManifest o =
        ingest(
            "{\"image\":\"i\",\"mounts\":["
                + "{\"type\":\"tmpfs\",\"target\":\"/tmp/scratch\"},"
                + "{\"source\":\"/home/u/data\",\"target\":\"/data\",\"type\":\"bind\"},"
                + "{\"type\":\"volume\",\"source\":\"cache\",\"target\":\"/z/cache\","
                + "\"consistency\":\"delegated\"}]}");
    assertEquals(
        List.of(
            new Mount("/home/u/data", "/data", Kind.bind),
            new Mount("", "/tmp/scratch", Kind.tmpfs),
            new Mount("cache", "/z/cache", Kind.volume)),
        s.mounts());
    assertEquals(s.address(), o.address());
    assertTrue(
        core(s).contains("{\"kind\":\"bind\",\"source\":\"/home/u/data\",\"target\":\"/data\"}"));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "name",
        "customizations",
        "$schema",
        "extensions",
        "settings",
        "waitFor",
        "shutdownAction",
        "userEnvProbe",
        "forwardPorts",
        "appPort",
        "portsAttributes",
        "otherPortsAttributes"
      })
  void cosmeticAndNetworkingFieldsAreAcceptedAndExcludedFromIdentity(String field) {
    String base = ingest("{\"image\":\"i\"}").address();
    assertEquals(base, ingest("{\"image\":\"i\",\"" + field + "\":\"x\"}").address());
    assertEquals(base, ingest("{\"image\":\"i\",\"" + field + "\":{\"a\":[1,2.5,-3]}}").address());
  }

  // ------------------------------------------------------------ refused fields

  /**
   * The refused vectors' fields, and the others the ingest refuses (by name, not read from
   * DevcontainerIngest, so that a field dropped from its refused sets fails here).
   */
  static Stream<String> refusedFields() {
    return Stream.concat(
        ManifestVectors.REFUSED_FIELDS.stream(),
        Stream.of(
            "containerUser",
            "context",
            "hostRequirements",
            "init",
            "overrideCommand",
            "overrideFeatureInstallOrder",
            "remoteEnv",
            "runServices",
            "service",
            "updateRemoteUserUID",
            "workspaceMount"));
  }

  @ParameterizedTest
  @MethodSource("refusedFields")
  void eachRefusedOrUnknownFieldIsNamedAndNoManifestIsMade(String field) {
    for (String value : List.of("\"echo hi\"", "true", "[\"a\"]", "{\"k\":\"v\"}", "false")) {
      List<Refusal> r = refusals("{\"image\":\"i\",\"" + field + "\":" + value + "}");
      assertEquals(1, r.size(), r.toString());
      assertEquals(field, r.get(0).field());
    }
  }

  @Test
  void theLifecycleHooksSayWhyTheyAreRefused() {
    assertEquals(6, DevcontainerIngest.HOOKS.size());
    for (String hook : DevcontainerIngest.HOOKS) {
      String why = refusals("{\"image\":\"i\",\"" + hook + "\":\"make\"}").get(0).reason();
      assertTrue(why.contains("runs commands"), why);
    }
    assertTrue(refusals("{\"image\":\"i\",\"fooBar\":1}").get(0).reason().contains("unknown"));
  }

  @Test
  void everyOffendingFieldIsNamedNotJustTheFirst() {
    List<String> f =
        fields(
            "{\"image\":\"i\",\"postCreateCommand\":\"x\",\"build\":{},\"runArgs\":[],"
                + "\"privileged\":true,\"capAdd\":[\"SYS_ADMIN\"],\"fooBar\":1,"
                + "\"containerEnv\":{\"N\":1,\"OK\":\"y\",\"B\":true},"
                + "\"mounts\":[\"type=bind,source=/a,target=/a,readonly\",{\"type\":\"x\","
                + "\"target\":\"/b\",\"source\":\"s\",\"ro\":\"1\"}],"
                + "\"features\":{\"f\":1.5}}");
    assertEquals(
        List.of(
            "postCreateCommand",
            "build",
            "runArgs",
            "privileged",
            "capAdd",
            "fooBar",
            "containerEnv.N",
            "containerEnv.B",
            "mounts[0].readonly",
            "mounts[1].ro",
            "mounts[1].type",
            "features.f"),
        f);
    ManifestRefusedException e =
        assertThrows(
            ManifestRefusedException.class, () -> ingest("{\"image\":\"i\",\"a\":1,\"b\":2}"));
    assertTrue(e.getMessage().contains("a: unknown") && e.getMessage().contains("b: unknown"));
  }

  @Test
  void aMissingImageIsRefused() {
    assertEquals(List.of("image"), fields("{}"));
    assertEquals(List.of("image"), fields("{\"image\":null}"));
    assertEquals(List.of("image"), fields("{\"image\":7}"));
    assertEquals(List.of("image"), fields("{\"image\":\"\"}"));
    assertEquals(List.of("build", "image"), fields("{\"build\":{\"dockerfile\":\"Dockerfile\"}}"));
  }

  @Test
  void containerEnvValuesMustBeStrings() {
    assertEquals(
        List.of("containerEnv.A", "containerEnv.B", "containerEnv.C", "containerEnv.D"),
        fields("{\"image\":\"i\",\"containerEnv\":{\"A\":1,\"B\":null,\"C\":[\"x\"],\"D\":{}}}"));
    assertEquals(
        List.of("containerEnv.X=Y"), fields("{\"image\":\"i\",\"containerEnv\":{\"X=Y\":\"v\"}}"));
    assertEquals(List.of("containerEnv"), fields("{\"image\":\"i\",\"containerEnv\":[\"A=1\"]}"));
  }

  @Test
  void featureProblemsAreNamed() {
    assertEquals(List.of("features"), fields("{\"image\":\"i\",\"features\":[{\"id\":1}]}"));
    assertEquals(List.of("features."), fields("{\"image\":\"i\",\"features\":{\"\":{}}}"));
    assertEquals(List.of("features.a"), fields("{\"image\":\"i\",\"features\":{\"a\":7}}"));
    assertEquals(List.of("features.a"), fields("{\"image\":\"i\",\"features\":{\"a\":true}}"));
    String why = refusals("{\"image\":\"i\",\"features\":{\"a\":{\"v\":[1,-2]}}}").get(0).reason();
    assertTrue(why.contains("features.a.v[1]"), why);
    // Integers in range are fine inside options.
    ingest("{\"image\":\"i\",\"features\":{\"a\":{\"n\":9007199254740991}}}");
  }

  @Test
  void mountProblemsAreNamed() {
    assertEquals(
        List.of("mounts[1].target"),
        fields(
            "{\"image\":\"i\",\"mounts\":[\"type=bind,source=/a,target=/x\","
                + "{\"type\":\"volume\",\"source\":\"v\",\"target\":\"/x\"}]}"));
    assertEquals(
        List.of("mounts[0].readonly", "mounts[0].bind-propagation"),
        fields(
            "{\"image\":\"i\",\"mounts\":[\"type=bind,source=/a,target=/x,readonly,"
                + "bind-propagation=rshared\"]}"));
    assertEquals(
        List.of("mounts[0].type"), fields("{\"image\":\"i\",\"mounts\":[\"source=v,target=/x\"]}"));
    assertEquals(
        List.of("mounts[0].type"),
        fields("{\"image\":\"i\",\"mounts\":[\"type=npipe,source=v,target=/x\"]}"));
    assertEquals(
        List.of("mounts[0].target"),
        fields("{\"image\":\"i\",\"mounts\":[\"type=volume,source=v\"]}"));
    assertEquals(
        List.of("mounts[0].target"),
        fields("{\"image\":\"i\",\"mounts\":[\"type=volume,source=v,target=rel\"]}"));
    assertEquals(
        List.of("mounts[0].source"),
        fields("{\"image\":\"i\",\"mounts\":[\"type=tmpfs,source=v,target=/t\"]}"));
    assertEquals(
        List.of("mounts[0].source"),
        fields("{\"image\":\"i\",\"mounts\":[\"type=bind,target=/t\"]}"));
    assertEquals(
        List.of("mounts[0].dst"),
        fields("{\"image\":\"i\",\"mounts\":[\"type=bind,src=/a,target=/t,dst=/u\"]}"));
    assertEquals(List.of("mounts[0]"), fields("{\"image\":\"i\",\"mounts\":[42]}"));
    assertEquals(List.of("mounts"), fields("{\"image\":\"i\",\"mounts\":\"type=bind\"}"));
    assertEquals(
        List.of("mounts[0].source"),
        fields(
            "{\"image\":\"i\",\"mounts\":[{\"type\":\"bind\",\"source\":1,\"target\":\"/t\"}]}"));
  }

  // ------------------------------------------------------------ determinism (check 17)

  @Test
  void keyOrderWhitespaceCommentsAndExcludedFieldsDoNotChangeTheAddress() {
    String plain =
        "{\"image\":\"ubuntu:24.04\",\"features\":{\"a\":\"1\",\"b\":{\"x\":true}},"
            + "\"containerEnv\":{\"FOO\":\"bar\",\"ZED\":\"z\"},"
            + "\"mounts\":[\"type=tmpfs,target=/t\",\"type=bind,source=/s,target=/b\"],"
            + "\"remoteUser\":\"u\"}";
    String reordered =
        "\uFEFF// leading comment\n{\n  \"remoteUser\" : \"u\", /* block\n comment */\n"
            + "  \"name\": \"Anything\", \"customizations\": {\"vscode\": {\"extensions\": [\"x\",],},},\n"
            + "  \"forwardPorts\": [3000, 8080,],\n"
            + "  \"mounts\": [ {\"target\":\"/b\",\"type\":\"bind\",\"source\":\"/s\"},"
            + " \"type=tmpfs,target=/t\", ],\n"
            + "  \"containerEnv\": { \"ZED\": \"z\", // why\n \"FOO\": \"bar\" },\n"
            + "  \"features\": {\"b\": {\"x\": true,}, \"a\": {\"version\": \"1\"}},\n"
            + "  \"image\": \"ubuntu:24.04\", // the base\n}\n";
    EnvManifest a = ingest(plain);
    EnvManifest b = ingest(reordered);
    assertEquals(core(a), core(b));
    assertEquals(a.address(), b.address());
    assertFalse(a.pinned());
    assertNotEquals(a.address(), ingest(plain.replace("\"bar\"", "\"baz\"")).address());
  }

  @Test
  void commentLikeTextInsideStringsIsKept() {
    EnvManifest m =
        ingest(
            "{\"image\":\"i\",\"containerEnv\":{\"URL\":\"http://x/*y*/\",\"C\":\"a,}\","
                + "\"Q\":\"\\\"//\"}}");
    assertEquals(Map.of("URL", "http://x/*y*/", "C", "a,}", "Q", "\"//"), m.containerEnv());
  }
}
