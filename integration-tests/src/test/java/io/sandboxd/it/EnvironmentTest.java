package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetRunRequest;
import io.sandboxd.daemon.rpc.ListEnvironmentsRequest;
import io.sandboxd.daemon.rpc.ReplayReply;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import io.sandboxd.executor.WasiToolchain;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Environments through the running daemon (issue 11 items 3 and 4, WIRE.md Q18): the node offers a
 * devcontainer.json, lists it, runs a C guest in it (variables, a bind, a volume that persists, a
 * tmpfs that does not), attests the manifest address, replays in it, and refuses what it must.
 */
class EnvironmentTest {
  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;
  static byte[] guest;
  static Path grants;
  static Path data;

  static final String DIGEST = "python@sha256:" + "5f".repeat(32);

  /** The bind is read-only by the grant; the volume and the tmpfs are writable. */
  static final String GRANTS =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000000000,\"cpu_time_ms\":20000,"
          + "\"memory_bytes\":67108864},\"storage\":{\"read\":[\"data/**\",\"vol/**\","
          + "\"scratch/**\"],\"write\":[\"vol/**\",\"scratch/**\"],\"delete\":[\"scratch/**\"]},"
          + "\"network\":{\"outbound\":[],\"inbound\":false},"
          + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
          + "\"host\":{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}}";

  /** A devcontainer.json as people write it: comments, trailing commas, both mount forms. */
  static String devcontainer(Path bindSource) {
    return "// the environment the tests run in\n{\n"
        + "  \"name\": \"python 3.12\", /* cosmetic */\n"
        + "  \"image\": \""
        + DIGEST
        + "\",\n"
        + "  \"containerEnv\": { \"LANG\": \"C.UTF-8\", \"APP_MODE\": \"test run\", },\n"
        + "  \"mounts\": [\n"
        + "    { \"source\": \""
        + bindSource
        + "\", \"target\": \"/data\", \"type\": \"bind\" },\n"
        + "    \"type=volume,source=cache,target=/vol\",\n"
        + "    \"type=tmpfs,target=/scratch\",\n"
        + "  ],\n"
        + "  \"forwardPorts\": [8080],\n"
        + "}\n";
  }

  static Path config(String name, Path devcontainer, Path bindAllow) throws Exception {
    return Files.writeString(
        dir.resolve(name + ".config.json"),
        "{\"environments\":[{\"name\":\"py312\",\"devcontainer\":\""
            + devcontainer
            + "\"}],\"bind_allow\":[\""
            + bindAllow
            + "\"]}");
  }

  /**
   * A daemon offering {@code devcontainer} (its {@link #config} named {@code name}) exits 1 at
   * start: what it said.
   */
  static String refusedStart(String name, Path devcontainer) throws Exception {
    String said =
        DaemonProcess.refusedStart(
            dir.resolve(name + "-state"),
            "--config",
            config(name, devcontainer, dir.resolve("srv")).toString());
    assertTrue(said.startsWith("daemon exited 1"), said);
    return said;
  }

  @BeforeAll
  static void start() throws Exception {
    guest = build(DaemonProcess.ROOT.resolve("executor-wasm/src/test/c/wasi_env.c"));
    grants = Files.writeString(dir.resolve("grants.json"), GRANTS);
    data = Files.createDirectories(dir.resolve("srv/data"));
    Files.writeString(data.resolve("in.txt"), "bound from the host\n");
    Path dc = Files.writeString(dir.resolve("py312.json"), devcontainer(data));
    daemon =
        DaemonProcess.start(
            dir.resolve("state"),
            dir.resolve("s.sock"),
            "--config",
            config("main", dc, dir.resolve("srv")).toString());
    client = new DaemonClient(daemon.socket);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  static byte[] build(Path source) throws Exception {
    Path out = Files.createDirectories(Path.of("target", "env-guests")).resolve("wasi_env.wasm");
    WasiToolchain.compile(out, source.toString());
    return Files.readAllBytes(out);
  }

  static String address() {
    return client
        .stub()
        .listEnvironments(ListEnvironmentsRequest.getDefaultInstance())
        .getEnvironments(0)
        .getAddress();
  }

  static SubmitReply submit(String env) {
    return Submissions.submit(client, inEnv(env));
  }

  /** The guest's _start under GRANTS in the environment {@code env}. */
  static SubmitRequest inEnv(String env) {
    return Submissions.request(guest, GRANTS, "_start").setEnv(env).build();
  }

  @Test
  void envsListsTheOfferedEnvironmentWithItsSignedManifest() throws Exception {
    DaemonProcess.Result r = daemon.ctl("envs", "--json");
    assertEquals(0, r.exit(), r.err());
    JsonNode list = CanonicalJson.parse(r.out().strip());
    assertEquals(1, list.size(), r.out());
    JsonNode py = list.get(0);
    assertEquals("py312", py.get("name").asText());
    assertTrue(py.get("pinned").asBoolean(), r.out());
    String address = py.get("address").asText();
    assertTrue(address.matches("[0-9a-f]{64}"), address);
    JsonNode manifest = py.get("manifest");
    assertEquals(address, manifest.get("address").asText());
    assertEquals("sandbox.env-manifest/1", manifest.get("core").get("schema").asText());
    assertEquals(DIGEST, manifest.get("core").get("image").asText());
    assertEquals(address, Envelope.addressOf(manifest.get("core")));
    // Signed by the node: the same key as its attestations.
    String nodeKey = CanonicalJson.parse(submit("").getAttestation()).get("public_key").asText();
    assertEquals(nodeKey, manifest.get("public_key").asText());
    assertTrue(
        Files.isRegularFile(daemon.state.resolve("environments").resolve(address + ".json")));
    DaemonProcess.Result text = daemon.ctl("envs");
    assertEquals(0, text.exit(), text.err());
    assertTrue(text.out().contains("py312\tb3:" + address + "\tpinned"), text.out());
  }

  @Test
  void aUnitRunsInItsEnvironmentAndTheAttestationNamesIt() throws Exception {
    String address = address();
    Path guestFile = Files.write(dir.resolve("guest.wasm"), guest);
    for (int n = 1; n <= 2; n++) {
      DaemonProcess.Result r =
          daemon.ctl(
              "run",
              guestFile.toString(),
              "--grants",
              grants.toString(),
              "--env",
              n == 1 ? "py312" : "b3:" + address,
              "--json");
      assertEquals(0, r.exit(), r.out() + r.err());
      JsonNode out = CanonicalJson.parse(r.out().strip());
      // What the unit printed: its stdout (WASI output is captured apart from the log).
      String log = out.get("stdout").get("text").asText();
      assertTrue(log.startsWith("env APP_MODE=test run\nenv LANG=C.UTF-8\nbind read:"), log);
      assertTrue(log.contains("bind read: bound from the host\n"), log);
      assertTrue(log.contains("bind write: errno=2\n"), "the grant keeps the bind read-only");
      assertTrue(log.contains("volume count=" + n + "\n"), "the volume persists: " + log);
      assertTrue(log.contains("tmpfs marker before=no\ntmpfs marker after=yes\n"), log);
      assertTrue(log.endsWith("done\n"), log);
      assertEquals(address, out.get("attestation").get("core").get("manifest").asText());
      String runId = out.get("run_id").asText();
      assertEquals(
          address,
          client.stub().getRun(GetRunRequest.newBuilder().setRunId(runId).build()).getManifest());
      ReplayReply replay = Submissions.replay(client, runId);
      assertTrue(replay.getMatches(), replay.toString());
    }
    assertFalse(Files.exists(data.resolve("out.txt")));
    assertEquals("2\n", Files.readString(daemon.state.resolve("volumes/cache/count.txt")));
    try (var s = Files.list(daemon.state.resolve("tmpfs"))) {
      assertEquals(0, s.count(), "every tmpfs is removed after its run");
    }
  }

  @Test
  void aRunInNoEnvironmentAttestsNoManifest() {
    SubmitReply r = submit("");
    JsonNode core = CanonicalJson.parse(r.getAttestation()).get("core");
    assertTrue(core.get("manifest").isNull(), r.getAttestation());
    assertTrue(
        r.getStdout().toStringUtf8().contains("bind read: errno="), r.getStdout().toStringUtf8());
    assertTrue(
        client
            .stub()
            .getRun(GetRunRequest.newBuilder().setRunId(r.getRunId()).build())
            .getManifest()
            .isEmpty());
  }

  @Test
  void anEnvironmentTheNodeDoesNotOfferIsRefused() throws Exception {
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> submit("py313"));
    assertEquals(Status.Code.NOT_FOUND, e.getStatus().getCode());
    assertTrue(e.getStatus().getDescription().contains("\"py313\""), e.getMessage());
    assertTrue(e.getStatus().getDescription().contains("py312"), e.getMessage());
    e = assertThrows(StatusRuntimeException.class, () -> submit("b3:" + "0".repeat(64)));
    assertEquals(Status.Code.NOT_FOUND, e.getStatus().getCode());
    Path guestFile = Files.write(dir.resolve("guest2.wasm"), guest);
    DaemonProcess.Result r =
        daemon.ctl("run", guestFile.toString(), "--grants", grants.toString(), "--env", "nope");
    assertEquals(2, r.exit(), r.out() + r.err());
    assertTrue(r.err().contains("\"nope\""), r.err());
  }

  @Test
  void aRefusedDevcontainerOrBindStopsTheStartNamingIt() throws Exception {
    Path bad =
        Files.writeString(
            dir.resolve("bad.json"),
            "{ \"image\": \"debian\", \"postCreateCommand\": \"make\", \"build\": {},"
                + " \"runArgs\": [\"--privileged\"] }");
    String msg = refusedStart("bad", bad);
    assertTrue(msg.contains("environments[0] \"py312\" (" + bad + ")"), msg);
    for (String field : List.of("postCreateCommand", "build", "runArgs")) {
      assertTrue(msg.contains(field), field + " named: " + msg);
    }

    Path elsewhere = Files.createDirectories(dir.resolve("elsewhere"));
    Path bind = Files.writeString(dir.resolve("bind.json"), devcontainer(elsewhere));
    String said = refusedStart("bind", bind);
    assertTrue(said.contains("mount /data: bind source " + elsewhere), said);
    assertTrue(said.contains("bind_allow"), said);
  }

  @Test
  void aRunIsNotReplayedOnceItsEnvironmentIsNoLongerOffered() throws Exception {
    Path state = dir.resolve("replay-state");
    Path sock = dir.resolve("r.sock");
    Path dc = Files.writeString(dir.resolve("replay.json"), devcontainer(data));
    String runId;
    String address;
    try (DaemonProcess d =
            DaemonProcess.start(state, sock, "--config", config("r1", dc, data).toString());
        DaemonClient c = new DaemonClient(sock)) {
      SubmitReply r = c.stub().submit(inEnv("py312"));
      runId = r.getRunId();
      address = CanonicalJson.parse(r.getAttestation()).get("core").get("manifest").asText();
    }
    Path none = Files.writeString(dir.resolve("none.config.json"), "{}");
    StatusRuntimeException e = StoppedState.refusedReplay(state, sock, none, runId);
    assertEquals(Status.Code.FAILED_PRECONDITION, e.getStatus().getCode());
    assertTrue(e.getStatus().getDescription().contains("b3:" + address), e.getMessage());
    assertTrue(e.getStatus().getDescription().contains("no longer offers"), e.getMessage());
  }
}
