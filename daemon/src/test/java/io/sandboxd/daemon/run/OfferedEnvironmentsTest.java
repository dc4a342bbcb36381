package io.sandboxd.daemon.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.config.DaemonConfig;
import io.sandboxd.executor.EnvironmentMounts;
import io.sandboxd.executor.UnitEnvironment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The node's offered environments: loaded from the configuration through the ingestion seam (here a
 * stand-in that reads the file as a manifest core, so these tests exercise this class alone),
 * checked, stored, and resolved by name or address.
 */
class OfferedEnvironmentsTest {
  static final SigningKey KEY = SigningKey.generate();

  /** Reads the file as the core itself; refuses a file without "image", naming it. */
  static final OfferedEnvironments.Ingest CORE_AS_FILE =
      (bytes, key) -> {
        var core = CanonicalJson.parse(bytes);
        if (!core.has("image")) {
          throw new IllegalArgumentException("$.image: missing");
        }
        return new OfferedEnvironments.SignedManifest(
            Envelope.sign(core, key), core.get("image").asText().contains("@sha256:"));
      };

  static String core(String mounts) {
    return "{\"schema\":\"sandbox.env-manifest/1\",\"image\":\"debian@sha256:"
        + "0".repeat(64)
        + "\",\"features\":[],\"container_env\":{\"LANG\":\"C.UTF-8\",\"A\":\"1\"},"
        + "\"mounts\":"
        + mounts
        + ",\"remote_user\":null}";
  }

  @Test
  void offeredEnvironmentsAreSignedStoredAndResolved(@TempDir Path tmp) throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    Path data = Files.createDirectories(tmp.resolve("srv/data"));
    Path file = tmp.resolve("py.json");
    Files.writeString(
        file,
        core(
            "[{\"source\":\""
                + data
                + "\",\"target\":\"/data\",\"kind\":\"bind\"},"
                + "{\"source\":\"cache\",\"target\":\"/vol\",\"kind\":\"volume\"}]"));
    OfferedEnvironments offered =
        OfferedEnvironments.load(
            new DaemonConfig.Environments(
                List.of(new DaemonConfig.Environments.Offered("py312", file)), List.of(data)),
            KEY,
            new EnvironmentMounts(state, List.of(data)),
            state.resolve("environments"),
            CORE_AS_FILE);
    OfferedEnvironments.Offer py = offered.resolve("py312");
    String address = Envelope.addressOf(CanonicalJson.parse(Files.readAllBytes(file)));
    assertEquals(address, py.address());
    assertEquals(py, offered.resolve("b3:" + address));
    assertTrue(py.manifest().pinned());
    assertEquals(Map.of("A", "1", "LANG", "C.UTF-8"), py.unit().containerEnv());
    assertEquals(
        List.of(
            new UnitEnvironment.Mount(data.toString(), "/data", UnitEnvironment.Kind.bind),
            new UnitEnvironment.Mount("cache", "/vol", UnitEnvironment.Kind.volume)),
        py.unit().mounts());
    String stored =
        Files.readString(state.resolve("environments").resolve(address + ".json")).strip();
    assertEquals(py.manifest().toJsonLine(), stored);
    assertTrue(
        Envelope.fromJson(
                (com.fasterxml.jackson.databind.node.ObjectNode)
                    ((com.fasterxml.jackson.databind.node.ObjectNode) CanonicalJson.parse(stored))
                        .without("pinned"))
            .verify(java.util.Optional.of(KEY.publicKey()))
            .isValid());

    EnvironmentNotOfferedException missing =
        assertThrows(EnvironmentNotOfferedException.class, () -> offered.resolve("py313"));
    assertTrue(missing.getMessage().contains("\"py313\""), missing.getMessage());
    assertTrue(missing.getMessage().contains("py312"), missing.getMessage());
    assertThrows(
        EnvironmentNotOfferedException.class, () -> offered.resolve("b3:" + "0".repeat(64)));
    assertTrue(offered.byAddress("0".repeat(64)).isEmpty());
    assertThrows(
        EnvironmentNotOfferedException.class, () -> OfferedEnvironments.none().resolve("py312"));
  }

  @Test
  void aRefusedEnvironmentStopsTheLoadNamingIt(@TempDir Path tmp) throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    Path other = Files.createDirectories(tmp.resolve("srv/other"));
    Path bad = tmp.resolve("bad.json");
    Files.writeString(bad, "{\"schema\":\"sandbox.env-manifest/1\"}");
    Path bind = tmp.resolve("bind.json");
    Files.writeString(
        bind, core("[{\"source\":\"" + other + "\",\"target\":\"/data\",\"kind\":\"bind\"}]"));
    EnvironmentMounts mounts = new EnvironmentMounts(state, List.of());
    for (Path f : List.of(bad, bind, tmp.resolve("absent.json"))) {
      EnvironmentRefusedException e =
          assertThrows(
              EnvironmentRefusedException.class,
              () ->
                  OfferedEnvironments.load(
                      new DaemonConfig.Environments(
                          List.of(new DaemonConfig.Environments.Offered("py", f)), List.of()),
                      KEY,
                      mounts,
                      state.resolve("environments"),
                      CORE_AS_FILE));
      assertTrue(e.getMessage().startsWith("environments[0] \"py\" (" + f + "): "), e.getMessage());
    }
    assertFalse(Files.exists(state.resolve("environments")), "nothing stored for a refusal");
  }
}
