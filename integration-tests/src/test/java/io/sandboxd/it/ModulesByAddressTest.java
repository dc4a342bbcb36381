package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Receipt;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ListModulesReply;
import io.sandboxd.daemon.rpc.ListModulesRequest;
import io.sandboxd.daemon.rpc.PutModuleReply;
import io.sandboxd.daemon.rpc.PutModuleRequest;
import io.sandboxd.daemon.rpc.ReplayRequest;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10 item 1 against the running daemon: modules stored by address (PutModule, `modules put`,
 * `modules list`), submitted by address (`run b3:<address>`) without recompiling, and the refusals.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ModulesByAddressTest {
  /** The configured module size: hello.wasm fits, the padded module below does not. */
  static final int MAX_BYTES = 4096;

  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;
  static byte[] hello;
  static String helloGrants;
  static Path config;

  @BeforeAll
  static void start() throws Exception {
    hello = Submissions.exampleUnit("hello");
    helloGrants = Submissions.exampleGrants("hello");
    config = dir.resolve("sandboxd.json");
    Files.writeString(
        config, "{\"modules\":{\"max_bytes\":" + MAX_BYTES + ",\"factory_cache_entries\":4}}");
    daemon = startDaemon();
    client = new DaemonClient(daemon.socket);
  }

  static DaemonProcess startDaemon() throws Exception {
    return DaemonProcess.start(
        dir.resolve("state"), dir.resolve("run/sandboxd.sock"), "--config", config.toString());
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  static SubmitReply submitByAddress(String address) {
    return Submissions.submit(
        client,
        SubmitRequest.newBuilder()
            .setModuleAddress(address)
            .setGrantsJson(helloGrants)
            .setEntry("run")
            .build());
  }

  static ListModulesReply list() {
    return client.stub().listModules(ListModulesRequest.getDefaultInstance());
  }

  static String sock() {
    return daemon.socket.toString();
  }

  @Test
  @Order(1)
  void putPrintsTheAddressAndTheModuleIsHeldOnDisk() throws Exception {
    Path file = dir.resolve("hello.wasm");
    Files.write(file, hello);
    DaemonProcess.Result put =
        DaemonProcess.sandboxctl(null, "modules", "put", file.toString(), "--socket", sock());
    assertEquals(0, put.exit(), put.err());
    String address = Blake3.hex(hello);
    assertEquals(address + "\n", put.out());
    assertArrayEquals(hello, Files.readAllBytes(daemon.state.resolve("modules").resolve(address)));

    PutModuleReply again = put(hello);
    assertEquals(address, again.getAddress());
    assertEquals(hello.length, again.getBytes());
    assertTrue(again.getAlreadyHeld());

    DaemonProcess.Result listed =
        DaemonProcess.sandboxctl(null, "modules", "list", "--json", "--socket", sock());
    assertEquals(0, listed.exit(), listed.err());
    JsonNode j = CanonicalJson.parse(listed.out().strip());
    assertEquals(1, j.get("modules").size());
    assertEquals(address, j.get("modules").get(0).get("address").asText());
    assertEquals(hello.length, j.get("modules").get(0).get("bytes").asLong());
    assertTrue(j.get("modules").get(0).get("compiled").asBoolean());
    assertEquals(4, j.get("factory_cache").get("capacity").asInt());

    DaemonProcess.Result table =
        DaemonProcess.sandboxctl(null, "modules", "list", "--socket", sock());
    assertEquals(0, table.exit(), table.err());
    assertTrue(table.out().contains(address), table.out());
  }

  @Test
  @Order(2)
  void aSubmissionByAddressRunsWithoutRecompilingAndReplays() throws Exception {
    String address = Blake3.hex(hello);
    ListModulesReply before = list();
    SubmitReply r = submitByAddress("b3:" + address);
    assertEquals("\"Completed\"", r.getOutcomeJson());
    assertTrue(r.getLog().contains("hello from a sandboxd unit"), r.getLog());
    Receipt receipt =
        Receipt.fromCore(Envelope.fromJson(CanonicalJson.parse(r.getReceipt())).core());
    assertEquals(address, receipt.unit());
    SubmitReply plain = submitByAddress(address.toUpperCase(java.util.Locale.ROOT));
    assertEquals("\"Completed\"", plain.getOutcomeJson());
    ListModulesReply after = list();
    assertEquals(before.getFactoryCacheMisses(), after.getFactoryCacheMisses(), "no recompile");
    assertTrue(after.getFactoryCacheHits() >= before.getFactoryCacheHits() + 2);

    // Repeated bytes hit the same cached factory.
    SubmitReply bytes = Submissions.submit(client, hello, helloGrants);
    assertEquals("\"Completed\"", bytes.getOutcomeJson());
    assertEquals(after.getFactoryCacheMisses(), list().getFactoryCacheMisses());

    // A run submitted by address keeps its module bytes: it replays.
    var replay = client.stub().replay(ReplayRequest.newBuilder().setRunId(r.getRunId()).build());
    assertTrue(replay.getMatches(), replay.toString());

    Path grants = dir.resolve("hello.grants.json");
    Files.writeString(grants, helloGrants);
    DaemonProcess.Result cli =
        DaemonProcess.sandboxctl(
            null, "run", "b3:" + address, "--grants", grants.toString(), "--socket", sock());
    assertEquals(0, cli.exit(), cli.err());
    // The run id and outcome go to stderr; stdout is the unit's own.
    assertTrue(cli.err().contains("outcome \"Completed\""), cli.err());
  }

  @Test
  @Order(3)
  void badAddressesAndBadModulesAreRefusedWithTheirCodes() throws Exception {
    String unknown = "ab".repeat(32);
    StatusRuntimeException nf =
        assertThrows(StatusRuntimeException.class, () -> submitByAddress("b3:" + unknown));
    assertEquals(Status.Code.NOT_FOUND, nf.getStatus().getCode());
    assertTrue(nf.getStatus().getDescription().contains("b3:" + unknown), nf.toString());

    for (String malformed : new String[] {"b3:xyz", "b3:" + unknown + "00", "sha256:" + unknown}) {
      StatusRuntimeException bad =
          assertThrows(StatusRuntimeException.class, () -> submitByAddress(malformed));
      assertEquals(Status.Code.INVALID_ARGUMENT, bad.getStatus().getCode(), malformed);
      assertTrue(bad.getStatus().getDescription().startsWith("module_address"), bad.toString());
    }

    StatusRuntimeException both =
        Submissions.refused(
            client,
            SubmitRequest.newBuilder()
                .setModule(ByteString.copyFrom(hello))
                .setModuleAddress(Blake3.hex(hello))
                .setGrantsJson(helloGrants)
                .build());
    assertEquals(Status.Code.INVALID_ARGUMENT, both.getStatus().getCode());
    assertTrue(both.getStatus().getDescription().contains("exactly one"), both.toString());

    int held = list().getModulesCount();
    byte[] invalid = hello.clone();
    invalid[invalid.length / 2] = (byte) 0xff;
    StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> put(invalid));
    assertEquals(Status.Code.INVALID_ARGUMENT, refused.getStatus().getCode());
    assertEquals(held, list().getModulesCount());
    assertFalse(Files.exists(daemon.state.resolve("modules").resolve(Blake3.hex(invalid))));

    byte[] big = new byte[MAX_BYTES + 1];
    System.arraycopy(hello, 0, big, 0, hello.length);
    StatusRuntimeException tooBig = assertThrows(StatusRuntimeException.class, () -> put(big));
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, tooBig.getStatus().getCode());
    assertTrue(tooBig.getStatus().getDescription().contains(String.valueOf(MAX_BYTES)));
    StatusRuntimeException tooBigSubmit =
        assertThrows(
            StatusRuntimeException.class, () -> Submissions.submit(client, big, helloGrants));
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, tooBigSubmit.getStatus().getCode());

    DaemonProcess.Result cli =
        DaemonProcess.sandboxctl(
            null, "run", "b3:" + unknown, "--grants", "/dev/null", "--socket", sock());
    assertEquals(2, cli.exit());
    assertTrue(cli.err().contains("NOT_FOUND"), cli.err());
  }

  @Test
  @Order(4)
  void heldModulesSurviveARestartAndChangedBytesAreRefused() throws Exception {
    String address = Blake3.hex(hello);
    client.close();
    daemon.stop();
    daemon = startDaemon();
    client = new DaemonClient(daemon.socket);
    assertEquals("\"Completed\"", submitByAddress(address).getOutcomeJson());

    Path file = daemon.state.resolve("modules").resolve(address);
    byte[] changed = hello.clone();
    changed[changed.length - 1] ^= 1;
    Files.write(file, changed);
    StatusRuntimeException e =
        assertThrows(StatusRuntimeException.class, () -> submitByAddress(address));
    assertEquals(Status.Code.DATA_LOSS, e.getStatus().getCode());
    // Putting the module again repairs it.
    assertFalse(put(hello).getAlreadyHeld());
    assertEquals("\"Completed\"", submitByAddress(address).getOutcomeJson());
  }

  /** Puts {@code module} into the daemon's module store over gRPC. */
  static PutModuleReply put(byte[] module) {
    return client
        .stub()
        .putModule(PutModuleRequest.newBuilder().setModule(ByteString.copyFrom(module)).build());
  }
}
