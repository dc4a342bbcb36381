package io.sandboxd.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.RunStatement;
import io.sandboxd.attest.SigstoreBundle;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ExportIntotoRequest;
import io.sandboxd.daemon.rpc.GetStatusRequest;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 14 item 4 through the running daemon: `sandboxctl runs export RUN --intoto FILE` writes a
 * Sigstore bundle v0.3 (DSSE, in-toto Statement v1) that sigstore-js verifies with the node's
 * public key, and that it refuses after a one-byte change.
 */
class IntotoExportTest {
  /** The verifier package (package.json + lock pinning exact versions), installed with npm ci. */
  static final Path VERIFIER_SOURCE =
      DaemonProcess.ROOT.resolve("integration-tests/src/test/node/intoto-verify");

  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;
  static byte[] module;
  static String nodeKey;
  static Path verifier;

  @BeforeAll
  static void start() throws Exception {
    verifier = installVerifier();
    daemon = DaemonProcess.start(dir.resolve("state"), dir.resolve("run/sandboxd.sock"));
    client = new DaemonClient(daemon.socket);
    Path wasm = dir.resolve("wasi_io.wasm");
    WasiProgramTest.build(DaemonProcess.ROOT.resolve("executor-wasm/src/test/c/wasi_io.c"), wasm);
    module = Files.readAllBytes(wasm);
    nodeKey = client.stub().getStatus(GetStatusRequest.getDefaultInstance()).getPublicKey();
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  /**
   * Copies the verifier package under target/ and runs `npm ci` there once (node and npm come from
   * bin/test): exact versions from the committed lock file, nothing else.
   */
  static Path installVerifier() throws Exception {
    Path to = DaemonProcess.ROOT.resolve("integration-tests/target/intoto-verify").toAbsolutePath();
    Files.createDirectories(to);
    boolean changed = false;
    for (String f : List.of("package.json", "package-lock.json", "verify.cjs")) {
      Path src = VERIFIER_SOURCE.resolve(f);
      Path dst = to.resolve(f);
      if (!Files.exists(dst) || Files.mismatch(src, dst) >= 0) {
        Files.copy(src, dst, StandardCopyOption.REPLACE_EXISTING);
        changed |= !f.endsWith(".cjs");
      }
    }
    if (changed || !Files.isDirectory(to.resolve("node_modules/@sigstore/verify"))) {
      Process p =
          new ProcessBuilder("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
              .directory(to.toFile())
              .redirectErrorStream(true)
              .start();
      String log = new String(p.getInputStream().readAllBytes(), UTF_8);
      if (!p.waitFor(300, TimeUnit.SECONDS) || p.exitValue() != 0) {
        fail("npm ci of the sigstore-js verifier failed:\n" + log);
      }
    }
    return to.resolve("verify.cjs");
  }

  /** sigstore-js on {@code bundle} with {@code key}: its exit status and JSON line. */
  static DaemonProcess.Result sigstoreJs(Path bundle, String key) throws Exception {
    Process p = new ProcessBuilder("node", verifier.toString(), bundle.toString(), key).start();
    String out = new String(p.getInputStream().readAllBytes(), UTF_8);
    String err = new String(p.getErrorStream().readAllBytes(), UTF_8);
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail("the verifier did not finish");
    }
    return new DaemonProcess.Result(p.exitValue(), out, err);
  }

  /** A key that signed nothing here. */
  static String other() {
    return "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
  }

  /**
   * Whether the bundle's one DSSE signature verifies under {@code keyHex} over {@code PAE(type,
   * payload)} = "DSSEv1" SP len(type) SP type SP len(payload) SP payload (lengths in ASCII decimal
   * bytes), checked with the JDK's Ed25519 on the key as an X.509 SubjectPublicKeyInfo.
   */
  static boolean paeSignatureVerifies(JsonNode bundleJson, String keyHex) throws Exception {
    String type = bundleJson.at("/dsseEnvelope/payloadType").textValue();
    byte[] body = Base64.getDecoder().decode(bundleJson.at("/dsseEnvelope/payload").textValue());
    JsonNode sigs = bundleJson.at("/dsseEnvelope/signatures");
    assertEquals(1, sigs.size(), sigs.toString());
    byte[] sig = Base64.getDecoder().decode(sigs.get(0).get("sig").textValue());
    byte[] typeBytes = type.getBytes(UTF_8);
    java.io.ByteArrayOutputStream pae = new java.io.ByteArrayOutputStream();
    pae.writeBytes(("DSSEv1 " + typeBytes.length + " ").getBytes(UTF_8));
    pae.writeBytes(typeBytes);
    pae.writeBytes((" " + body.length + " ").getBytes(UTF_8));
    pae.writeBytes(body);
    byte[] spki =
        java.util.HexFormat.of().parseHex("302a300506032b6570032100" + keyHex.toLowerCase());
    java.security.PublicKey key =
        java.security.KeyFactory.getInstance("Ed25519")
            .generatePublic(new java.security.spec.X509EncodedKeySpec(spki));
    java.security.Signature v = java.security.Signature.getInstance("Ed25519");
    v.initVerify(key);
    v.update(pae.toByteArray());
    return v.verify(sig);
  }

  static SubmitReply run(String... argv) {
    return Submissions.submit(
        client,
        SubmitRequest.newBuilder()
            .setModule(ByteString.copyFrom(module))
            .setGrantsJson(WasiProgramTest.GRANTS)
            .addAllArgs(List.of(argv))
            .build());
  }

  static Path export(String runId, String... extra) throws Exception {
    Path out = dir.resolve(runId + "-" + System.nanoTime() + ".intoto.json");
    List<String> args =
        new ArrayList<>(
            List.of(
                "runs",
                "export",
                runId,
                "--intoto",
                out.toString(),
                "--socket",
                daemon.socket.toString()));
    args.addAll(List.of(extra));
    DaemonProcess.Result r = DaemonProcess.sandboxctl(null, args.toArray(new String[0]));
    assertEquals(0, r.exit(), r.err());
    assertTrue(r.err().contains("signed by " + nodeKey), r.err());
    return out;
  }

  @Test
  void sigstoreJsVerifiesTheExportAndRefusesAOneByteChange() throws Exception {
    SubmitReply run = run("prog", "exit", "0");
    byte[] stdout = run.getStdout().toByteArray();
    assertEquals("bye\n", new String(stdout, UTF_8));
    Path bundle = export(run.getRunId(), "--module", dir.resolve("wasi_io.wasm").toString());

    DaemonProcess.Result ok = sigstoreJs(bundle, nodeKey);
    assertEquals(0, ok.exit(), ok.out() + ok.err());
    JsonNode verdict = CanonicalJson.parse(ok.out().strip());
    assertTrue(verdict.get("verified").booleanValue());
    assertEquals(RunStatement.PREDICATE_TYPE, verdict.get("predicateType").textValue());
    assertEquals(run.getRunId(), verdict.get("runId").textValue());
    JsonNode subjects = verdict.get("subject");
    assertEquals("module", subjects.at("/0/name").textValue());
    assertEquals(Blake3.hex(module), subjects.at("/0/digest/blake3").textValue());
    assertEquals(RunStatement.sha256(module), subjects.at("/0/digest/sha256").textValue());
    assertEquals("stdout", subjects.at("/1/name").textValue());
    assertEquals(RunStatement.sha256(stdout), subjects.at("/1/digest/sha256").textValue());
    assertEquals("stderr", subjects.at("/2/name").textValue());
    assertEquals(
        RunStatement.sha256(run.getStderr().toByteArray()),
        subjects.at("/2/digest/sha256").textValue());

    // The project's own reading agrees: the envelopes in the predicate verify under the node key.
    SigstoreBundle parsed =
        SigstoreBundle.fromJson(CanonicalJson.parse(Files.readAllBytes(bundle)));
    assertEquals(
        run.getRunId(),
        RunStatement.check(
            parsed.verify(PublicKey.ofHex(nodeKey, "key")), PublicKey.ofHex(nodeKey, "key")));

    // An independent check of the DSSE signature: PAE written out here from the DSSE v1 text and
    // verified by the JDK's own Ed25519, neither the project's DSSE code nor its key classes.
    JsonNode exported = CanonicalJson.parse(Files.readAllBytes(bundle));
    assertTrue(paeSignatureVerifies(exported, nodeKey), "the DSSE signature over PAE");
    assertFalse(paeSignatureVerifies(exported, other()), "the DSSE signature under another key");

    // Another key: refused by the key selector.
    String other = other();
    DaemonProcess.Result wrongKey = sigstoreJs(bundle, other);
    assertEquals(1, wrongKey.exit(), wrongKey.out());

    // One byte of the signed statement changed (a digit of a subject digest, inside the payload):
    // the file is re-encoded around it, so only the signature can notice.
    JsonNode json = CanonicalJson.parse(Files.readAllBytes(bundle));
    byte[] payload = Base64.getDecoder().decode(json.at("/dsseEnvelope/payload").textValue());
    String text = new String(payload, UTF_8);
    int at = text.indexOf(RunStatement.sha256(stdout));
    assertTrue(at > 0);
    payload[at] = (byte) (payload[at] == 'a' ? 'b' : 'a');
    ((com.fasterxml.jackson.databind.node.ObjectNode) json.get("dsseEnvelope"))
        .put("payload", Base64.getEncoder().encodeToString(payload));
    Path changed = dir.resolve("changed-payload.json");
    Files.writeString(changed, json.toString());
    assertFalse(paeSignatureVerifies(json, nodeKey), "PAE over a changed payload");
    DaemonProcess.Result bad = sigstoreJs(changed, nodeKey);
    assertEquals(1, bad.exit(), bad.out());
    assertTrue(bad.out().contains("signature"), bad.out());

    // One byte of the file itself: a character of the base64 signature.
    byte[] file = Files.readAllBytes(bundle);
    String fileText = new String(file, UTF_8);
    int sigAt = fileText.indexOf("\"sig\":\"") + 12;
    file[sigAt] = (byte) (file[sigAt] == 'A' ? 'B' : 'A');
    Path flipped = dir.resolve("changed-signature.json");
    Files.write(flipped, file);
    DaemonProcess.Result bad2 = sigstoreJs(flipped, nodeKey);
    assertEquals(1, bad2.exit(), bad2.out());
  }

  @Test
  void withoutTheModuleBytesTheSubjectKeepsItsBlake3AndTheExportStillVerifies() throws Exception {
    SubmitReply run = run("prog", "echo", "x");
    Path bundle = export(run.getRunId());
    DaemonProcess.Result ok = sigstoreJs(bundle, nodeKey);
    assertEquals(0, ok.exit(), ok.out() + ok.err());
    JsonNode module0 = CanonicalJson.parse(ok.out().strip()).at("/subject/0");
    assertEquals(Blake3.hex(module), module0.at("/digest/blake3").textValue());
    // The node did not keep the module (sent inline), so it cannot name its sha256.
    assertTrue(module0.at("/digest/sha256").isMissingNode(), module0.toString());
    // Two exports of one run sign the same statement (canonical bytes).
    JsonNode a = CanonicalJson.parse(Files.readAllBytes(bundle));
    JsonNode b = CanonicalJson.parse(Files.readAllBytes(export(run.getRunId())));
    assertEquals(a.at("/dsseEnvelope/payload"), b.at("/dsseEnvelope/payload"));
  }

  /** The daemon's in-toto export over gRPC, of what {@code request} names. */
  static void exportIntoto(ExportIntotoRequest.Builder request) {
    client.stub().exportIntoto(request.build());
  }

  @Test
  void badRequestsAreRefusedWithTheirReason() throws Exception {
    StatusRuntimeException missing =
        Assertions.assertThrows(
            StatusRuntimeException.class,
            () -> exportIntoto(ExportIntotoRequest.newBuilder().setRunId("no-such-run")));
    assertEquals(Status.Code.NOT_FOUND, missing.getStatus().getCode());

    SubmitReply run = run("prog", "echo", "y");
    StatusRuntimeException wrongModule =
        Assertions.assertThrows(
            StatusRuntimeException.class,
            () ->
                exportIntoto(
                    ExportIntotoRequest.newBuilder()
                        .setRunId(run.getRunId())
                        .setModule(ByteString.copyFromUtf8("not the module"))));
    assertEquals(Status.Code.INVALID_ARGUMENT, wrongModule.getStatus().getCode());
    assertTrue(
        wrongModule.getStatus().getDescription().contains("module"), wrongModule.getMessage());

    DaemonProcess.Result noTarget = daemon.ctl("runs", "export", run.getRunId());
    assertNotEquals(0, noTarget.exit());
    assertTrue(noTarget.err().contains("--intoto"), noTarget.err());
    assertFalse(noTarget.out().contains("payload"));
  }
}
