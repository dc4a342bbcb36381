package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpAmendment;
import io.sandboxd.attest.JcpCheckpoint;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.KeyFile;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.AmendRunRequest;
import io.sandboxd.daemon.rpc.DurableRunReply;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.JcpKeysReply;
import io.sandboxd.daemon.rpc.JcpKeysRequest;
import io.sandboxd.daemon.rpc.MintEventRequest;
import io.sandboxd.daemon.rpc.ResumeRunRequest;
import io.sandboxd.daemon.rpc.WaitRunRequest;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 15 item 3 on a live run, through the running daemon: a detached run under a minted child
 * makes a host call (random_u64) that is allowed; the issuer amends the run mid-way (`sandboxctl
 * jcp checkpoint`, `jcp amend`) to a grant without randomness and the same call is then DENIED;
 * amendments signed by the agent or a stranger, a widening one, one naming a checkpoint not in the
 * chain and a replayed one are each refused naming the rule, and nothing changes.
 */
class AmendLiveRunTest {
  static final String BASE =
      "\"compute\":{\"devices\":[],\"energy_budget_uj\":9000000000000,\"cpu_time_ms\":600000,"
          + "\"memory_bytes\":1048576}";
  static final String PARENT =
      "{" + BASE + ",\"host\":{\"logging\":true,\"clock\":true,\"random\":true}}";
  static final String CEILING = "{" + BASE + ",\"host\":{\"logging\":true,\"random\":true}}";
  static final String TIGHTER = "{" + BASE + ",\"host\":{\"logging\":true}}";

  /** Within the parent but wider than the grant in force (clock). */
  static final String WIDER = "{" + BASE + ",\"host\":{\"logging\":true,\"clock\":true}}";

  /**
   * Each step asks for a random number: it logs {@code allowed} once, then keeps stepping while the
   * call is allowed; the first DENIED answer logs {@code denied} and ends the run. It gives up (and
   * says so) after a bounded number of steps, so a failed swap cannot hang the test.
   */
  static final String UNIT =
      """
      (module
        (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
        (import "sandbox" "random_u64" (func $rand (param i32) (result i32)))
        (memory (export "memory") 1)
        (data (i32.const 0) "allowed")
        (data (i32.const 16) "denied")
        (data (i32.const 32) "gave up")
        (global $seen (mut i32) (i32.const 0))
        (global $n (mut i32) (i32.const 0))
        (func (export "step") (result i32)
          (local $i i32)
          (global.set $n (i32.add (global.get $n) (i32.const 1)))
          (if (i32.gt_u (global.get $n) (i32.const 2000000))
            (then (drop (call $log (i32.const 32) (i32.const 7))) (return (i32.const 0))))
          (if (i32.eqz (call $rand (i32.const 64)))
            (then
              (if (i32.eqz (global.get $seen))
                (then
                  (global.set $seen (i32.const 1))
                  (drop (call $log (i32.const 0) (i32.const 7)))))
              (loop $spin
                (local.set $i (i32.add (local.get $i) (i32.const 1)))
                (br_if $spin (i32.lt_u (local.get $i) (i32.const 20000))))
              (return (i32.const 1))))
          (drop (call $log (i32.const 16) (i32.const 6)))
          (i32.const 0)))
      """;

  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;
  static SigningKey issuer;
  static SigningKey stranger;
  static SigningKey agentKey;
  static String holder;
  static String agent;
  static String childGrantsId;
  static String childJson;
  static String policy;
  static byte[] module;

  /**
   * Adds the task policy {@code issuer} signs for {@code holder} on {@code c}: children of the
   * ceiling over the parent, ten in all, ten a minute. Its address.
   */
  static String addTaskPolicy(DaemonClient c, SigningKey issuer, String holder) {
    JcpMintPolicy p =
        new JcpMintPolicy(
            issuer.publicKey().hex(),
            holder,
            grants(PARENT).grantsId(),
            CanonicalJson.parse(CEILING),
            10,
            60_000,
            10,
            List.of(new JcpMintPolicy.Trigger("task", CanonicalJson.parse("{}"))),
            4_000_000_000_000L);
    return StandingGrantsTest.addPolicy(c, Envelope.sign(p.toCore(), issuer), PARENT);
  }

  /** A task event {@code issuer} signs with nonce {@code nonce}, good for ten minutes. */
  static String taskEvent(SigningKey issuer, String nonce) {
    return StandingGrantsTest.signedBy(
        issuer, "{\"type\":\"task\"}", nonce, System.currentTimeMillis() + 600_000);
  }

  @BeforeAll
  static void start() throws Exception {
    issuer = SeededKeys.counting(0x10);
    stranger = SeededKeys.counting(0x40);
    module = Wat2Wasm.parse(UNIT);
    daemon = DaemonProcess.start(dir.resolve("state"), dir.resolve("run/sandboxd.sock"));
    client = new DaemonClient(daemon.socket);
    JcpKeysReply keys = client.jcp().jcpKeys(JcpKeysRequest.getDefaultInstance());
    holder = keys.getHolder();
    agent = keys.getAgent();
    try (Stream<Path> files = Files.walk(dir.resolve("state"))) {
      Path agentFile =
          files.filter(p -> p.getFileName().toString().equals("agent.ed25519")).findFirst().get();
      agentKey = KeyFile.read(agentFile);
    }
    assertEquals(agent, agentKey.publicKey().hex(), "the agent key file is the daemon's");
    policy = addTaskPolicy(client, issuer, holder);
    var minted =
        client
            .jcp()
            .mintEvent(
                MintEventRequest.newBuilder()
                    .setPolicy(policy)
                    .setEventJson(taskEvent(issuer, "amend-live"))
                    .build());
    childGrantsId = minted.getGrantsId();
    childJson = minted.getChild();
    assertEquals(grants(CEILING).grantsId(), childGrantsId);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  static Grants grants(String json) {
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  static String detach() {
    return Submissions.detachedUnderMinted(client, module, childGrantsId);
  }

  static Envelope amendment(String checkpoint, String newGrants, SigningKey signer) {
    JcpAmendment a =
        new JcpAmendment(
            checkpoint,
            signer.publicKey().hex(),
            grants(newGrants).canonicalTree(),
            grants(newGrants).grantsId(),
            "tighten");
    return Envelope.sign(a.toCore(), signer);
  }

  static DaemonProcess.Result ctl(String... args) throws Exception {
    return daemon.ctl(args);
  }

  static DaemonProcess.Result amendViaCli(String run, Envelope amendment) throws Exception {
    Path f = Files.createTempFile(dir, "amendment", ".json");
    Files.writeString(f, amendment.toJsonLine());
    return ctl("jcp", "amend", run, f.toString());
  }

  static StatusRuntimeException refusedBy(String rule, Runnable call) {
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, call::run);
    assertEquals(Status.Code.PERMISSION_DENIED, e.getStatus().getCode(), e.getMessage());
    assertTrue(
        e.getStatus().getDescription().startsWith("rule " + rule + ":"),
        e.getStatus().getDescription());
    return e;
  }

  static void amendRpc(String run, Envelope a) {
    client
        .jcp()
        .amendRun(AmendRunRequest.newBuilder().setRunId(run).setAmendment(a.toJsonLine()).build());
  }

  static List<Envelope> envelopes(String lines) {
    return lines
        .lines()
        .filter(l -> !l.isBlank())
        .map(l -> Envelope.fromJson(CanonicalJson.parse(l)))
        .toList();
  }

  static Envelope childEnvelope() {
    return Envelope.fromJson(CanonicalJson.parse(childJson));
  }

  static DaemonProcess.Result verify(String input) throws Exception {
    return DaemonProcess.sandboxctl(
        input.getBytes(StandardCharsets.UTF_8), "verify", "-", "--signer", daemon.publicKey());
  }

  static String state(String run) {
    return Submissions.waitState(client, run, 1);
  }

  static String log(String run) {
    return client.stub().getRunLog(DurableRunRequest.newBuilder().setRunId(run).build()).getLog();
  }

  @Test
  void anAllowedCallIsDeniedAfterALiveAmendmentAndBadAmendmentsChangeNothing() throws Exception {
    String run = detach();
    // Park once: the stored segment log proves the call was allowed under the child grant.
    assertEquals("parked", Submissions.suspend(client, run));
    assertEquals("allowed\n", log(run));
    client.stub().resumeRun(ResumeRunRequest.newBuilder().setRunId(run).build());
    assertEquals("running", state(run));

    DaemonProcess.Result cp = ctl("jcp", "checkpoint", run, "--json");
    assertEquals(0, cp.exit(), cp.err());
    Envelope cpEnv = Envelope.fromJson(CanonicalJson.parse(cp.out().strip()));
    JcpCheckpoint c = JcpCheckpoint.fromCore(cpEnv.core());
    assertEquals(agent, cpEnv.publicKey(), "a checkpoint is signed by the agent key");
    assertEquals(childGrantsId, c.grantsId());
    assertEquals(run, c.runId());
    assertEquals(0, c.seq());

    // Refusals through the daemon, each naming its rule; the run keeps running.
    refusedBy(
        "distinct_principal", () -> amendRpc(run, amendment(cpEnv.address(), TIGHTER, agentKey)));
    refusedBy("issuer", () -> amendRpc(run, amendment(cpEnv.address(), TIGHTER, stranger)));
    refusedBy("tighten_only", () -> amendRpc(run, amendment(cpEnv.address(), WIDER, issuer)));
    refusedBy(
        "checkpoint_in_chain", () -> amendRpc(run, amendment("ab".repeat(32), TIGHTER, issuer)));
    DaemonProcess.Result widened = amendViaCli(run, amendment(cpEnv.address(), WIDER, issuer));
    assertEquals(1, widened.exit(), widened.err());
    assertTrue(widened.err().contains("rule tighten_only:"), widened.err());
    assertEquals("running", state(run), "refused amendments change nothing");

    // The issuer's tightening amendment, through the CLI: the next random_u64 is DENIED.
    Envelope good = amendment(cpEnv.address(), TIGHTER, issuer);
    DaemonProcess.Result ok = amendViaCli(run, good);
    assertEquals(0, ok.exit(), ok.err());
    assertEquals(grants(TIGHTER).grantsId(), ok.out().strip());
    DurableRunReply done =
        client
            .stub()
            .waitRun(WaitRunRequest.newBuilder().setRunId(run).setTimeoutMs(120_000).build());
    assertEquals("completed", done.getState(), done.toString());
    String log = log(run);
    assertEquals("allowed\ndenied\n", log, "allowed before the amendment, DENIED after it");

    // The segment that ran under the child grant ends where the amendment took effect and is
    // sealed under the child grant; the segments after it name new_grants_id (issue 23 item 4).
    DaemonProcess.Result shown = ctl("runs", "show", run, "--export");
    assertEquals(0, shown.exit(), shown.err());
    List<Envelope> exported = envelopes(shown.out());
    List<RunSegment> segs =
        exported.stream()
            .filter(e -> e.schema().orElse("").equals(RunSegment.SCHEMA))
            .map(e -> RunSegment.fromCore(e.core()))
            .toList();
    String tighter = grants(TIGHTER).grantsId();
    assertEquals(
        List.of("execute", "suspend", "resume", "execute", "suspend", "resume", "execute"),
        segs.stream().map(x -> x.kind().name()).toList(),
        "the client's park, then the amendment's: " + shown.out());
    assertEquals(
        List.of(
            childGrantsId,
            childGrantsId,
            childGrantsId,
            childGrantsId,
            childGrantsId,
            tighter,
            tighter),
        segs.stream().map(RunSegment::grantsId).toList());
    // The signed amendment travels with the chain (after the segments, with policy and child).
    assertTrue(
        exported.stream().anyMatch(e -> e.address().equals(good.address())),
        "the export carries the amendment: " + shown.out());
    var rec =
        client
            .stub()
            .getRecords(
                io.sandboxd.daemon.rpc.GetRecordsRequest.newBuilder().setRunId(run).build());
    io.sandboxd.attest.Attestation att =
        io.sandboxd.attest.Attestation.fromCore(
            Envelope.fromJson(CanonicalJson.parse(rec.getAttestations(0))).core());
    assertEquals(tighter, att.grantsId(), "the final segment's grants");
    assertEquals(List.of(good.address()), att.jcp().amendments());
    assertEquals(childEnvelope().address(), att.jcp().child());

    // Offline verify: the whole chain with its JCP records is valid; tampered variants are not.
    StringBuilder all = new StringBuilder();
    rec.getSegmentsList().forEach(x -> all.append(x).append('\n'));
    rec.getReceiptsList().forEach(x -> all.append(x).append('\n'));
    rec.getAttestationsList().forEach(x -> all.append(x).append('\n'));
    String jcp = String.join("\n", rec.getJcpList()) + "\n";
    DaemonProcess.Result v = verify(all + jcp);
    assertEquals(0, v.exit(), v.err() + v.out());
    assertTrue(v.out().contains("1 amendment(s), each issuer-signed and tightening"), v.out());
    // Without the amendment the change of grants_id at the resume is unexplained.
    DaemonProcess.Result dropped = verify(all + jcp.replace(good.toJsonLine() + "\n", ""));
    assertEquals(1, dropped.exit(), dropped.out());
    assertTrue(dropped.err().contains("seq 5 of run " + run), dropped.err());
    // The same amendment twice: a replay, named.
    DaemonProcess.Result replayed = verify(all + jcp + good.toJsonLine() + "\n");
    assertEquals(1, replayed.exit(), replayed.out());
    assertTrue(
        replayed.err().contains(good.address() + ": amendment: rule replay:"), replayed.err());
    // A widening one by the issuer, and one signed by a stranger: each named by its address.
    Envelope widens = amendment(cpEnv.address(), WIDER, issuer);
    DaemonProcess.Result wide = verify(all + jcp + widens.toJsonLine() + "\n");
    assertEquals(1, wide.exit(), wide.out());
    assertTrue(
        wide.err().contains(widens.address() + ": amendment: rule tighten_only:"), wide.err());
    Envelope forged = amendment(cpEnv.address(), TIGHTER, stranger);
    DaemonProcess.Result notIssuer =
        verify(all + jcp.replace(good.toJsonLine(), forged.toJsonLine()));
    assertEquals(1, notIssuer.exit(), notIssuer.out());
    assertTrue(
        notIssuer.err().contains(forged.address() + ": amendment: rule issuer:"), notIssuer.err());

    // The same amendment again: replay.
    refusedBy("replay", () -> amendRpc(run, good));
    // A second checkpoint chains to the first and names the grants now in force.
    DaemonProcess.Result cp2 = ctl("jcp", "checkpoint", run, "--json");
    assertFalse(cp2.exit() == 0, "a completed run is not checkpointed: " + cp2.out());
  }

  @Test
  void aRunAmendedWhileParkedResumesUnderTheAmendedGrant() throws Exception {
    String run = detach();
    assertEquals("parked", Submissions.suspend(client, run));
    assertEquals("allowed\n", log(run));
    DaemonProcess.Result cp = ctl("jcp", "checkpoint", run);
    assertEquals(0, cp.exit(), cp.err());
    amendRpc(run, amendment(cp.out().strip(), TIGHTER, issuer));
    // Resume with the grants in force (the amended ones): the first call is DENIED.
    DurableRunReply r =
        client.stub().resumeRun(ResumeRunRequest.newBuilder().setRunId(run).build());
    RunSegment resume =
        RunSegment.fromCore(Envelope.fromJson(CanonicalJson.parse(r.getSegment())).core());
    assertEquals(grants(TIGHTER).grantsId(), resume.grantsId());
    DurableRunReply done =
        client
            .stub()
            .waitRun(WaitRunRequest.newBuilder().setRunId(run).setTimeoutMs(120_000).build());
    assertEquals("completed", done.getState(), done.toString());
    assertEquals("allowed\ndenied\n", log(run));
    // Offering the old, wider grant on a later resume would be refused; here the run is done.
    StatusRuntimeException e =
        assertThrows(
            StatusRuntimeException.class,
            () ->
                client
                    .stub()
                    .resumeRun(
                        ResumeRunRequest.newBuilder()
                            .setRunId(run)
                            .setGrantsJson(CEILING)
                            .build()));
    assertEquals(Status.Code.FAILED_PRECONDITION, e.getStatus().getCode(), e.getMessage());
  }

  @Test
  void aParkedRunWhoseChildWasReleasedDoesNotResume() throws Exception {
    // A child of its own (another budget, so another grants_id): releasing it touches no other
    // test.
    String own = CEILING.replace("\"cpu_time_ms\":600000", "\"cpu_time_ms\":599999");
    String grantsId =
        client
            .jcp()
            .mintEvent(
                MintEventRequest.newBuilder()
                    .setPolicy(policy)
                    .setEventJson(taskEvent(issuer, "release-test"))
                    .setGrantsJson(own)
                    .build())
            .getGrantsId();
    String run = Submissions.detachedUnderMinted(client, module, grantsId);
    assertEquals("parked", Submissions.suspend(client, run));
    DaemonProcess.Result rel = ctl("jcp", "release", grantsId);
    assertEquals(0, rel.exit(), rel.err());
    StatusRuntimeException e =
        refusedBy(
            "released",
            () -> client.stub().resumeRun(ResumeRunRequest.newBuilder().setRunId(run).build()));
    assertTrue(e.getStatus().getDescription().contains("child "), e.getMessage());
    assertEquals("parked", state(run), "the refused resume changed nothing");
  }
}
