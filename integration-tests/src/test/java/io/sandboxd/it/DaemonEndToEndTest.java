package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.Verification;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetRecordsRequest;
import io.sandboxd.daemon.rpc.GetRunRequest;
import io.sandboxd.daemon.rpc.ListRunsRequest;
import io.sandboxd.daemon.rpc.RecordsReply;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real daemon process, a real gRPC client over its Unix socket, and the real CLI verifying what
 * it exported: the walking skeleton of issue 2, end to end.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DaemonEndToEndTest {
  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;
  static byte[] hello;
  static String helloGrants;

  @BeforeAll
  static void start() throws Exception {
    hello = Submissions.exampleUnit("hello");
    helloGrants = Submissions.exampleGrants("hello");
    daemon = DaemonProcess.start(dir.resolve("state"), dir.resolve("run/sandboxd.sock"));
    client = new DaemonClient(daemon.socket);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  static SubmitReply submit(byte[] module, String grants, String entry) {
    return Submissions.submit(client, module, grants, entry, 120);
  }

  static PublicKey nodeKey(SubmitReply r) {
    return PublicKey.ofHex(
        Envelope.fromJson(CanonicalJson.parse(r.getSegment())).publicKey(), "public_key");
  }

  @Test
  @Order(1)
  void exampleUnitRunsAndItsExportedChainVerifiesOfflineUntilOneByteFlips() throws Exception {
    SubmitReply r = submit(hello, helloGrants, "run");
    assertEquals("\"Completed\"", r.getOutcomeJson());
    assertTrue(r.getLog().contains("hello from a sandboxd unit"), r.getLog());

    Envelope receipt = Envelope.fromJson(CanonicalJson.parse(r.getReceipt()));
    Envelope attestation = Envelope.fromJson(CanonicalJson.parse(r.getAttestation()));
    PublicKey node = nodeKey(r);
    assertEquals(new Verification.Valid(), receipt.verify(Optional.of(node)));
    assertEquals(new Verification.Valid(), attestation.verify(Optional.of(node)));
    Attestation a = Attestation.fromCore(attestation.core());
    assertEquals(receipt.address(), a.receipt());
    assertEquals(new Outcome.Completed(), a.outcome());
    assertFalse(a.clockGranted());
    Receipt rc = Receipt.fromCore(receipt.core());
    assertEquals("Estimator", rc.energy().get(DeviceClass.Cpu).provenance().name());

    RecordsReply rec =
        client.stub().getRecords(GetRecordsRequest.newBuilder().setRunId(r.getRunId()).build());
    assertEquals(1, rec.getSegmentsCount());
    Path export = dir.resolve("chain.jsonl");
    Files.writeString(export, String.join("\n", rec.getSegmentsList()) + "\n");

    DaemonProcess.Result ok =
        DaemonProcess.sandboxctl(null, "verify", export.toString(), "--signer", node.hex());
    assertEquals(0, ok.exit(), ok.err());
    assertTrue(ok.out().startsWith("valid"), ok.out());

    // The CLI's own export path, piped into verify, agrees.
    DaemonProcess.Result shown = daemon.ctl("runs", "show", r.getRunId(), "--export");
    assertEquals(0, shown.exit(), shown.err());
    DaemonProcess.Result piped =
        DaemonProcess.sandboxctl(
            shown.out().getBytes(StandardCharsets.UTF_8), "verify", "-", "--signer", node.hex());
    assertEquals(0, piped.exit(), piped.err());

    // Flip one byte of the core: the digit of the segment's at_ms.
    byte[] bytes = Files.readAllBytes(export);
    String text = new String(bytes, StandardCharsets.UTF_8);
    int at = text.indexOf("\"at_ms\":") + "\"at_ms\":".length();
    bytes[at] = (byte) (bytes[at] == '1' ? '2' : '1');
    Files.write(export, bytes);
    DaemonProcess.Result bad =
        DaemonProcess.sandboxctl(null, "verify", export.toString(), "--signer", node.hex());
    assertEquals(1, bad.exit(), bad.out() + bad.err());
    assertTrue(bad.err().contains("seq 0"), bad.err());
  }

  @Test
  @Order(2)
  void aRecordedRunReplaysToTheSameJournalRoot() throws Exception {
    SubmitReply r = submit(hello, helloGrants, "run");
    DaemonProcess.Result replay = daemon.ctl("replay", r.getRunId());
    assertEquals(0, replay.exit(), replay.out() + replay.err());
    assertTrue(replay.out().contains("replay matches"), replay.out());
    Attestation a =
        Attestation.fromCore(Envelope.fromJson(CanonicalJson.parse(r.getAttestation())).core());
    assertTrue(replay.out().contains(a.journalRoot()), replay.out());
  }

  @Test
  @Order(3)
  void badInputGetsATypedErrorNamingTheFaultAndTheDaemonKeepsServing() throws Exception {
    StatusRuntimeException malformed =
        assertThrows(StatusRuntimeException.class, () -> submit(hello, "{\"compute\":", "run"));
    assertEquals(Status.Code.INVALID_ARGUMENT, malformed.getStatus().getCode());
    assertTrue(malformed.getStatus().getDescription().startsWith("grants:"));

    String unknownField =
        helloGrants.replace("\"inference\": false", "\"inference\": false, \"teleport\": true");
    StatusRuntimeException unknown =
        assertThrows(StatusRuntimeException.class, () -> submit(hello, unknownField, "run"));
    assertTrue(unknown.getStatus().getDescription().contains("teleport"), unknown.getMessage());

    StatusRuntimeException notWasm =
        assertThrows(
            StatusRuntimeException.class,
            () ->
                submit(
                    "#!/bin/sh\necho hi\n".getBytes(StandardCharsets.UTF_8), helloGrants, "run"));
    assertEquals(Status.Code.INVALID_ARGUMENT, notWasm.getStatus().getCode());
    assertTrue(notWasm.getStatus().getDescription().contains("module"), notWasm.getMessage());

    StatusRuntimeException noEntry =
        assertThrows(StatusRuntimeException.class, () -> submit(hello, helloGrants, "main"));
    assertTrue(noEntry.getStatus().getDescription().contains("\"main\""), noEntry.getMessage());

    // A module importing something the ABI does not define.
    byte[] unknownImport = Wat2Wasm.parse("(module (import \"sandbox\" \"teleport\" (func)))");
    StatusRuntimeException badImport =
        assertThrows(StatusRuntimeException.class, () -> submit(unknownImport, helloGrants, "run"));
    assertTrue(
        badImport.getStatus().getDescription().contains("sandbox.teleport"),
        badImport.getMessage());

    StatusRuntimeException noRun =
        assertThrows(
            StatusRuntimeException.class,
            () -> client.stub().getRun(GetRunRequest.newBuilder().setRunId("nope").build()));
    assertEquals(Status.Code.NOT_FOUND, noRun.getStatus().getCode());

    assertEquals("\"Completed\"", submit(hello, helloGrants, "run").getOutcomeJson());
    assertTrue(daemon.process.isAlive());
  }

  @Test
  @Order(4)
  void aRunawayUnitIsTerminatedWhileAnotherCompletes() throws Exception {
    byte[] spin = Submissions.exampleUnit("spin");
    String spinGrants = Submissions.exampleGrants("spin");
    CompletableFuture<SubmitReply> runaway =
        CompletableFuture.supplyAsync(() -> submit(spin, spinGrants, "run"));
    SubmitReply ok = submit(hello, helloGrants, "run");
    assertEquals("\"Completed\"", ok.getOutcomeJson());
    SubmitReply t = runaway.get(120, TimeUnit.SECONDS);
    assertEquals("{\"Terminated\":{\"breach\":\"CpuTime\"}}", t.getOutcomeJson());
    Receipt receipt =
        Receipt.fromCore(Envelope.fromJson(CanonicalJson.parse(t.getReceipt())).core());
    assertTrue(receipt.cpuTimeMs() >= 300, "the receipt records what was consumed");
  }

  @Test
  @Order(5)
  void aSecondDaemonRefusesTheLiveSocketInsteadOfStealingIt() throws Exception {
    Exception refused =
        assertThrows(
            IllegalStateException.class,
            () -> DaemonProcess.start(dir.resolve("state2"), daemon.socket));
    assertTrue(refused.getMessage().contains("served by a live daemon"), refused.getMessage());
    assertEquals("\"Completed\"", submit(hello, helloGrants, "run").getOutcomeJson());
  }

  @Test
  @Order(6)
  void acknowledgedRunsSurviveAHardKillAndRestart() throws Exception {
    SubmitReply r = submit(hello, helloGrants, "run");
    int before = client.stub().listRuns(ListRunsRequest.getDefaultInstance()).getRunsCount();
    daemon.process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    client.close();

    daemon = DaemonProcess.start(daemon.state, daemon.socket);
    client = new DaemonClient(daemon.socket);
    assertTrue(
        daemon.log().contains("every record and column checks against the signed ledger"),
        daemon.log());
    var runs = client.stub().listRuns(ListRunsRequest.getDefaultInstance());
    assertEquals(before, runs.getRunsCount());
    var again = client.stub().getRun(GetRunRequest.newBuilder().setRunId(r.getRunId()).build());
    assertEquals(r.getOutcomeJson(), again.getOutcomeJson());
    // Same node identity after restart: the key file persisted.
    SubmitReply after = submit(hello, helloGrants, "run");
    assertEquals(nodeKey(r), nodeKey(after));
    assertNotEquals(r.getRunId(), after.getRunId());
  }
}
