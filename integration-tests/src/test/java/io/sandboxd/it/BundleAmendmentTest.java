package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.IntotoStatement;
import io.sandboxd.attest.JcpAmendment;
import io.sandboxd.attest.KeyFile;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.SigstoreBundle;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.AmendRunRequest;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.GetRecordsRequest;
import io.sandboxd.daemon.rpc.JcpKeysRequest;
import io.sandboxd.daemon.rpc.MintEventRequest;
import io.sandboxd.daemon.rpc.RecordsReply;
import io.sandboxd.daemon.rpc.WaitRunRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23 item 4 (bundles and in-toto) through two running daemons: a durable run under a child
 * minted on node a is parked and amended there (its grants change with no segment behind the
 * change), exported, imported on node b, resumed there under the amended grant (the call the
 * amendment took away is DENIED), and the whole moved chain with its JCP records verifies offline,
 * from b's records and from b's in-toto export. Bundles with the amendment removed, edited,
 * widening, replayed twice or from another run (alone or with that run's checkpoint) are refused by
 * b naming {@code jcp}, nothing imported; b's agent does not extend a's checkpoint chain.
 */
class BundleAmendmentTest {
  @TempDir static Path dir;
  static DaemonProcess a;
  static DaemonProcess b;
  static DaemonClient ca;
  static DaemonClient cb;
  static SigningKey issuer;
  static String childGrantsId;
  static byte[] module;
  static final String TIGHTER = AmendLiveRunTest.TIGHTER;

  @BeforeAll
  static void start() throws Exception {
    issuer = SeededKeys.counting(0x21);
    module = Wat2Wasm.parse(AmendLiveRunTest.UNIT);
    a = DaemonProcess.start(dir.resolve("a"), dir.resolve("a.sock"));
    b = DaemonProcess.start(dir.resolve("b"), dir.resolve("b.sock"));
    ca = new DaemonClient(a.socket);
    cb = new DaemonClient(b.socket);
    String holder = ca.jcp().jcpKeys(JcpKeysRequest.getDefaultInstance()).getHolder();
    String policy = AmendLiveRunTest.addTaskPolicy(ca, issuer, holder);
    childGrantsId =
        ca.jcp()
            .mintEvent(
                MintEventRequest.newBuilder()
                    .setPolicy(policy)
                    .setEventJson(AmendLiveRunTest.taskEvent(issuer, "bundle-amendment"))
                    .build())
            .getGrantsId();
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(ca, cb, a, b);
  }

  static Envelope amendment(String checkpoint, String grants) {
    var g = AmendLiveRunTest.grants(grants);
    return Envelope.sign(
        new JcpAmendment(
                checkpoint, issuer.publicKey().hex(), g.canonicalTree(), g.grantsId(), "tighten")
            .toCore(),
        issuer);
  }

  /** A run under the child on a, parked once ("allowed" logged), checkpointed and amended. */
  static String[] amendedParkedRun() throws Exception {
    String run = Submissions.detachedUnderMinted(ca, module, childGrantsId);
    assertEquals("parked", Submissions.suspend(ca, run));
    DaemonProcess.Result cp = a.ctl("jcp", "checkpoint", run);
    assertEquals(0, cp.exit(), cp.err());
    Envelope amend = amendment(cp.out().strip(), TIGHTER);
    ca.jcp()
        .amendRun(
            AmendRunRequest.newBuilder().setRunId(run).setAmendment(amend.toJsonLine()).build());
    return new String[] {run, cp.out().strip(), amend.toJsonLine()};
  }

  static String importRefusal(JsonNode bundle, String name) throws Exception {
    Path f = Files.write(dir.resolve(name), CanonicalJson.canonicalize(bundle));
    DaemonProcess.Result r = b.ctl("runs", "import", f.toString());
    assertEquals(2, r.exit(), r.out() + r.err());
    assertTrue(r.err().contains("bundle refused, nothing imported: jcp: "), r.err());
    return r.err();
  }

  static ObjectNode withJcp(JsonNode bundle, List<JsonNode> jcp) {
    ObjectNode o = (ObjectNode) bundle.deepCopy();
    ArrayNode arr = o.putArray("jcp");
    jcp.forEach(arr::add);
    return o;
  }

  static List<JsonNode> jcpOf(JsonNode bundle) {
    List<JsonNode> out = new ArrayList<>();
    bundle.get("jcp").forEach(out::add);
    return out;
  }

  @Test
  void anAmendedParkedRunMovesResumesUnderTheAmendedGrantAndVerifiesAndTamperedBundlesDoNot()
      throws Exception {
    String[] first = amendedParkedRun();
    String run = first[0];
    Envelope good = Envelope.fromJson(CanonicalJson.parse(first[2]));
    // Another run's amendment, signed by the same issuer, to the same grants, and its checkpoint.
    String[] second = amendedParkedRun();
    Envelope foreign = Envelope.fromJson(CanonicalJson.parse(second[2]));
    JsonNode foreignCheckpoint = null;
    for (String l :
        ca.stub()
            .getRecords(GetRecordsRequest.newBuilder().setRunId(second[0]).build())
            .getJcpList()) {
      if (Envelope.fromJson(CanonicalJson.parse(l)).address().equals(second[1])) {
        foreignCheckpoint = CanonicalJson.parse(l);
      }
    }
    assertTrue(foreignCheckpoint != null, "a shows the other run's checkpoint");

    String keyA = a.publicKey();
    String keyB = b.publicKey();
    Path file = dir.resolve(run + ".bundle");
    DaemonProcess.Result ex =
        a.ctl("runs", "export", run, "--bundle", file.toString(), "--to", keyB);
    assertEquals(0, ex.exit(), ex.err());
    JsonNode bundle = CanonicalJson.parse(Files.readAllBytes(file));
    String tighter = AmendLiveRunTest.grants(TIGHTER).grantsId();
    assertEquals(
        tighter,
        AmendLiveRunTest.grants(bundle.get("grants").textValue()).grantsId(),
        "the bundle's grants are the amended ones");
    List<JsonNode> jcp = jcpOf(bundle);
    List<String> schemas = new ArrayList<>();
    jcp.forEach(e -> schemas.add(e.get("core").get("schema").textValue()));
    assertEquals(
        List.of("jcp.mint-policy/1", "jcp.child/1", "jcp.checkpoint/1", "jcp.amendment/1"),
        schemas);
    assertEquals(good.address(), Envelope.fromJson(jcp.get(3)).address());
    assertTrue(
        bundle.get("seal").get("core").get("jcp").toString().contains(good.address()),
        "the seal binds the JCP records: " + bundle.get("seal"));

    // Hostile bundles, each refused naming jcp; b holds nothing afterwards.
    String removed = importRefusal(withJcp(bundle, jcp.subList(0, 3)), "removed");
    assertTrue(removed.contains("no amendment is carried"), removed);
    ObjectNode noJcp = (ObjectNode) bundle.deepCopy();
    noJcp.remove("jcp");
    assertTrue(importRefusal(noJcp, "nojcp").contains("none carried"));

    ObjectNode editedAmendment = (ObjectNode) jcp.get(3).deepCopy();
    ((ObjectNode) editedAmendment.get("core")).put("reason", "loosen");
    // Its address recomputed as an editor would: only the issuer's signature then stands in the
    // way.
    editedAmendment.put(
        "address",
        io.sandboxd.attest.Blake3.hex(CanonicalJson.canonicalize(editedAmendment.get("core"))));
    List<JsonNode> edited = new ArrayList<>(jcp.subList(0, 3));
    edited.add(editedAmendment);
    String whyEdited = importRefusal(withJcp(bundle, edited), "edited");
    assertTrue(
        whyEdited.contains("amendment: rule") && whyEdited.contains("signature does not verify"),
        whyEdited);

    Envelope widens = amendment(first[1], AmendLiveRunTest.CEILING);
    List<JsonNode> wide = new ArrayList<>(jcp);
    wide.add(widens.toJson());
    ObjectNode widened = withJcp(bundle, wide);
    widened.put("grants", AmendLiveRunTest.CEILING);
    String whyWide = importRefusal(widened, "widened");
    assertTrue(whyWide.contains(widens.address() + ": amendment: rule tighten_only:"), whyWide);

    List<JsonNode> replayed = new ArrayList<>(jcp.subList(0, 3));
    replayed.add(foreign.toJson());
    String whyForeign = importRefusal(withJcp(bundle, replayed), "foreign");
    assertTrue(
        whyForeign.contains(foreign.address() + ": amendment: rule checkpoint_in_chain:"),
        whyForeign);
    List<JsonNode> withItsCheckpoint = new ArrayList<>(jcp.subList(0, 3));
    withItsCheckpoint.add(foreignCheckpoint);
    withItsCheckpoint.add(foreign.toJson());
    String whyItsCheckpoint = importRefusal(withJcp(bundle, withItsCheckpoint), "foreign-cp");
    assertTrue(
        whyItsCheckpoint.contains(
            second[1] + ": a checkpoint of run " + second[0] + ", the bundle's run is " + run),
        whyItsCheckpoint);
    List<JsonNode> twice = new ArrayList<>(jcp);
    twice.add(jcp.get(3));
    String whyTwice = importRefusal(withJcp(bundle, twice), "twice");
    assertTrue(whyTwice.contains(good.address() + ": amendment: rule replay:"), whyTwice);
    assertEquals(
        Status.Code.NOT_FOUND,
        assertThrows(
                StatusRuntimeException.class,
                () ->
                    cb.stub()
                        .waitRun(WaitRunRequest.newBuilder().setRunId(run).setTimeoutMs(1).build()))
            .getStatus()
            .getCode());

    // The bundle as exported: imported, its JCP records shown by b, resumed under the amendment.
    DaemonProcess.Result imported = b.ctl("runs", "import", file.toString());
    assertEquals(0, imported.exit(), imported.err());
    RecordsReply parked =
        cb.stub().getRecords(GetRecordsRequest.newBuilder().setRunId(run).build());
    List<String> carried = new ArrayList<>();
    parked
        .getJcpList()
        .forEach(l -> carried.add(Envelope.fromJson(CanonicalJson.parse(l)).address()));
    List<String> sent = new ArrayList<>();
    jcp.forEach(e -> sent.add(Envelope.fromJson(e).address()));
    assertEquals(sent, carried, "b shows the records the bundle carried, in order");
    // b's agent may not extend the chain of checkpoints a's agent began.
    DaemonProcess.Result cpHere = b.ctl("jcp", "checkpoint", run);
    assertEquals(2, cpHere.exit(), cpHere.out() + cpHere.err());
    assertTrue(cpHere.err().contains("one agent throughout"), cpHere.err());
    b.resumeToCompletion(run);
    assertEquals(
        "allowed\ndenied\n",
        cb.stub().getRunLog(DurableRunRequest.newBuilder().setRunId(run).build()).getLog(),
        "allowed on a before the amendment, DENIED on b after it");

    RecordsReply rec = cb.stub().getRecords(GetRecordsRequest.newBuilder().setRunId(run).build());
    List<RunSegment> segs = new ArrayList<>();
    rec.getSegmentsList()
        .forEach(
            l -> segs.add(RunSegment.fromCore(Envelope.fromJson(CanonicalJson.parse(l)).core())));
    RunSegment resume = segs.get(2);
    assertEquals(RunSegment.Kind.resume, resume.kind());
    assertEquals(tighter, resume.grantsId(), "the resume on b names new_grants_id");
    var att =
        io.sandboxd.attest.Attestation.fromCore(
            Envelope.fromJson(CanonicalJson.parse(rec.getAttestations(0))).core());
    assertEquals(List.of(good.address()), att.jcp().amendments());

    // Offline: the whole moved chain with its JCP records, under both node keys.
    StringBuilder all = new StringBuilder();
    rec.getSegmentsList().forEach(x -> all.append(x).append('\n'));
    rec.getReceiptsList().forEach(x -> all.append(x).append('\n'));
    rec.getAttestationsList().forEach(x -> all.append(x).append('\n'));
    rec.getJcpList().forEach(x -> all.append(x).append('\n'));
    DaemonProcess.Result v =
        DaemonProcess.sandboxctl(
            all.toString().getBytes(StandardCharsets.UTF_8),
            "verify",
            "-",
            "--signer",
            keyA,
            "--signer",
            keyB);
    assertEquals(0, v.exit(), v.err() + v.out());
    assertTrue(v.out().contains("1 amendment(s), each issuer-signed and tightening"), v.out());

    // The in-toto export from b carries the chain and the amendment; verify checks them.
    Path intoto = dir.resolve(run + ".intoto.json");
    DaemonProcess.Result ix = b.ctl("runs", "export", run, "--intoto", intoto.toString());
    assertEquals(0, ix.exit(), ix.err());
    DaemonProcess.Result iv =
        DaemonProcess.sandboxctl(
            null, "verify", intoto.toString(), "--signer", keyA, "--signer", keyB);
    assertEquals(0, iv.exit(), iv.err() + iv.out());
    assertTrue(iv.out().contains("1 amendment(s), each issuer-signed and tightening"), iv.out());

    // sigstore-js: the signature under b's key, and the carried amendments are the attested ones.
    IntotoExportTest.verifier = IntotoExportTest.installVerifier();
    DaemonProcess.Result js = IntotoExportTest.sigstoreJs(intoto, keyB);
    assertEquals(0, js.exit(), js.out() + js.err());
    JsonNode verdict = CanonicalJson.parse(js.out().strip());
    assertEquals("[\"" + good.address() + "\"]", verdict.get("amendments").toString(), js.out());

    // Re-signed by b's own key with the amendment dropped, or swapped for a widening one: the
    // signature holds, the evidence does not.
    SigningKey nodeB = KeyFile.read(dir.resolve("b/keys/node.ed25519"));
    IntotoStatement st =
        SigstoreBundle.fromJson(CanonicalJson.parse(Files.readAllBytes(intoto)))
            .verify(nodeB.publicKey());
    ArrayNode predJcp = (ArrayNode) st.predicate().get("jcp");
    ObjectNode dropped = (ObjectNode) st.predicate().deepCopy();
    ArrayNode fewer = dropped.putArray("jcp");
    for (int i = 0; i < predJcp.size() - 1; i++) {
      fewer.add(predJcp.get(i));
    }
    String whyDropped = resignedVerify(st, dropped, nodeB, keyA, keyB, "dropped");
    assertTrue(whyDropped.contains("statement.predicate.jcp: amendments []"), whyDropped);
    DaemonProcess.Result jsDropped =
        IntotoExportTest.sigstoreJs(dir.resolve("dropped.intoto.json"), keyB);
    assertEquals(1, jsDropped.exit(), jsDropped.out());
    assertTrue(jsDropped.out().contains("predicate.jcp: amendments []"), jsDropped.out());
    // Without its mint policy the amendment has no issuer to be checked against (AmendmentChain).
    ObjectNode noPolicy = (ObjectNode) st.predicate().deepCopy();
    ArrayNode rest = noPolicy.putArray("jcp");
    for (int i = 1; i < predJcp.size(); i++) {
      rest.add(predJcp.get(i));
    }
    String whyNoPolicy = resignedVerify(st, noPolicy, nodeB, keyA, keyB, "nopolicy");
    assertTrue(whyNoPolicy.contains("is not in the input"), whyNoPolicy);
  }

  static String resignedVerify(
      IntotoStatement st, JsonNode predicate, SigningKey key, String keyA, String keyB, String name)
      throws Exception {
    IntotoStatement changed = new IntotoStatement(st.subjects(), st.predicateType(), predicate);
    Path f =
        Files.writeString(
            dir.resolve(name + ".intoto.json"),
            CanonicalJson.canonicalString(SigstoreBundle.sign(changed, key).toJson()));
    DaemonProcess.Result r =
        DaemonProcess.sandboxctl(null, "verify", f.toString(), "--signer", keyA, "--signer", keyB);
    assertEquals(1, r.exit(), r.out() + r.err());
    return r.err();
  }
}
