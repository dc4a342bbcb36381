package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.DurableRunReply;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.ImportRunRequest;
import io.sandboxd.daemon.rpc.ListRunsRequest;
import io.sandboxd.daemon.rpc.ResumeRunRequest;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.WaitRunRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 12, done when: two daemons with their own state and keys; a unit counting through `step` is
 * parked mid-way on the first, exported, imported and resumed on the second, and ends with the
 * result and the gapless log of an unparked run; every refusal of the issue through the real
 * daemons, nothing half-imported, and both keep serving.
 */
class DurableRunTest {
  static final int TOTAL = 60;

  /**
   * Counts to TOTAL, one step at a time, in memory and in a mutable global; logs each count. Each
   * step spins 40M iterations (tens of ms compiled), so a detached run is still running when a
   * CLI's suspend (a JVM start away) reaches it on an idle machine.
   */
  static final String COUNTER =
      "(module\n"
          + "  (import \"sandbox\" \"log\" (func $log (param i32 i32) (result i32)))\n"
          + "  (memory (export \"memory\") 1 1)\n"
          + "  (global $steps (mut i32) (i32.const 0))\n"
          + "  (data (i32.const 0) \"count 000\")\n"
          + "  (func $spin (param $n i32) (local $i i32)\n"
          + "    (block $out (loop $l\n"
          + "      (br_if $out (i32.ge_u (local.get $i) (local.get $n)))\n"
          + "      (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
          + "      (br $l))))\n"
          + "  (func (export \"step\") (result i32) (local $c i32)\n"
          + "    (local.set $c (i32.add (i32.load (i32.const 64)) (i32.const 1)))\n"
          + "    (i32.store (i32.const 64) (local.get $c))\n"
          + "    (global.set $steps (i32.add (global.get $steps) (i32.const 1)))\n"
          + "    (if (i32.ne (global.get $steps) (local.get $c)) (then unreachable))\n"
          + "    (i32.store8 (i32.const 6)\n"
          + "      (i32.add (i32.const 48) (i32.div_u (local.get $c) (i32.const 100))))\n"
          + "    (i32.store8 (i32.const 7) (i32.add (i32.const 48)\n"
          + "      (i32.rem_u (i32.div_u (local.get $c) (i32.const 10)) (i32.const 10))))\n"
          + "    (i32.store8 (i32.const 8)\n"
          + "      (i32.add (i32.const 48) (i32.rem_u (local.get $c) (i32.const 10))))\n"
          + "    (drop (call $log (i32.const 0) (i32.const 9)))\n"
          + "    (call $spin (i32.const 40000000))\n"
          + "    (i32.lt_u (local.get $c) (i32.const "
          + TOTAL
          + "))))\n";

  static final String GRANTS =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":9000000000000,\"cpu_time_ms\":600000,"
          + "\"memory_bytes\":1048576},\"storage\":{\"read\":[],\"write\":[],\"delete\":[]},"
          + "\"network\":{\"outbound\":[],\"inbound\":false},"
          + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
          + "\"host\":{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}}";

  /** The same grant with logging and a KV read added: wider. */
  static final String WIDER = GRANTS.replace("\"kv\":{\"read\":false", "\"kv\":{\"read\":true");

  @TempDir static Path dir;
  static DaemonProcess a;
  static DaemonProcess b;
  static DaemonClient ca;
  static DaemonClient cb;
  static byte[] module;

  /** Pinned by digest: a run may resume on another host only in such an environment. */
  static final String PINNED = "ubuntu@sha256:" + "a1".repeat(32);

  static Path devcontainer(String name, String value) throws Exception {
    return devcontainer(name, value, PINNED);
  }

  static Path devcontainer(String name, String value, String image) throws Exception {
    return Files.writeString(
        dir.resolve(name + ".devcontainer.json"),
        "{\"image\":\"" + image + "\",\"containerEnv\":{\"STAGE\":\"" + value + "\"}}");
  }

  @BeforeAll
  static void start() throws Exception {
    module = Wat2Wasm.parse(COUNTER);
    Path ca1 =
        Files.writeString(
            dir.resolve("a.config.json"),
            "{\"environments\":[{\"name\":\"dev\",\"devcontainer\":\""
                + devcontainer("a-dev", "one")
                + "\"},{\"name\":\"loose\",\"devcontainer\":\""
                + devcontainer("a-loose", "one", "ubuntu:24.04")
                + "\"}]}");
    // Node b offers "dev" drifted (another variable value) and "same", identical to a's "dev".
    Path cb1 =
        Files.writeString(
            dir.resolve("b.config.json"),
            "{\"environments\":[{\"name\":\"dev\",\"devcontainer\":\""
                + devcontainer("b-dev", "two")
                + "\"},{\"name\":\"same\",\"devcontainer\":\""
                + devcontainer("b-same", "one")
                + "\"},{\"name\":\"loose\",\"devcontainer\":\""
                + devcontainer("b-loose", "one", "ubuntu:24.04")
                + "\"}]}");
    a = DaemonProcess.start(dir.resolve("a"), dir.resolve("a.sock"), "--config", ca1.toString());
    b = DaemonProcess.start(dir.resolve("b"), dir.resolve("b.sock"), "--config", cb1.toString());
    ca = new DaemonClient(a.socket);
    cb = new DaemonClient(b.socket);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(ca, cb, a, b);
  }

  static String detach(DaemonClient c, String env) {
    SubmitReply r =
        c.stub()
            .submit(
                Submissions.request(module, GRANTS, "step").setEnv(env).setDetach(true).build());
    assertTrue(r.getOutcomeJson().isEmpty(), "a detached submit answers before any outcome");
    return r.getRunId();
  }

  static String sock(DaemonProcess d) {
    return d.socket.toString();
  }

  static Status.Code code(Runnable call) {
    return assertThrows(StatusRuntimeException.class, call::run).getStatus().getCode();
  }

  static String parkedBundle(String env, Path file) throws Exception {
    String run = detach(ca, env);
    assertEquals("parked", Submissions.suspend(ca, run));
    DaemonProcess.Result e = a.ctl("runs", "export", run, "--bundle", file.toString());
    assertEquals(0, e.exit(), e.err());
    return run;
  }

  @Test
  void aRunParkedOnAnotherHostIsNotResumedInAnUnpinnedEnvironment() throws Exception {
    Path file = dir.resolve("loose.bundle");
    String run = parkedBundle("loose", file);
    DaemonProcess.Result imp = b.ctl("runs", "import", file.toString());
    assertEquals(0, imp.exit(), imp.err());
    // The same manifest on both nodes, but a tag is no basis for a cross-host "same environment".
    DaemonProcess.Result res = b.ctl("runs", "resume", run, "--env", "loose");
    assertNotEquals(0, res.exit(), res.out());
    assertTrue(res.err().contains("not pinned"), res.err());
    assertTrue(
        b.ctl("runs", "list")
            .out()
            .lines()
            .anyMatch(l -> l.startsWith(run) && l.contains("parked")),
        "refused, and still parked");
  }

  // ================================================================ the whole journey

  @Test
  void aRunParkedOnOneNodeEndsOnAnotherWithTheResultAndLogOfAnUnparkedRun() throws Exception {
    // The reference: the same unit, never parked.
    SubmitReply plain = Submissions.submit(ca, module, GRANTS, "step", 300);
    assertEquals("\"Completed\"", plain.getOutcomeJson(), plain.getLog());
    assertTrue(plain.getLog().contains("count 060"), plain.getLog());

    String run = detach(ca, "dev");
    DaemonProcess.Result susp = a.ctl("runs", "suspend", run);
    assertEquals(0, susp.exit(), susp.err());
    assertTrue(susp.out().contains(" parked "), susp.out());
    String partial = a.ctl("runs", "log", run).out();
    assertTrue(partial.contains("count 001"), partial);
    assertFalse(partial.contains("count 060"), "parked mid-way, not at the end: " + partial);
    DaemonProcess.Result listed = a.ctl("runs", "list");
    assertTrue(
        listed.out().lines().anyMatch(l -> l.startsWith(run) && l.contains("parked")),
        listed.out());
    DaemonProcess.Result waited = a.ctl("runs", "wait", run, "--json");
    JsonNode w = CanonicalJson.parse(waited.out().strip());
    assertEquals("parked", w.get("state").textValue());
    assertEquals(2, w.get("segments").asInt(), "execute + suspend");
    // The parked chain verifies through the CLI, as the README's pipe does.
    String export = a.ctl("runs", "show", run, "--export").out();
    DaemonProcess.Result v =
        DaemonProcess.sandboxctl(
            export.getBytes(StandardCharsets.UTF_8), "verify", "-", "--signer", a.publicKey());
    assertEquals(0, v.exit(), v.err() + v.out());
    assertTrue(v.out().contains("valid: chain of 2 segment(s)"), v.out());

    Path file = dir.resolve("journey.bundle");
    DaemonProcess.Result ex = a.ctl("runs", "export", run, "--bundle", file.toString());
    assertEquals(0, ex.exit(), ex.err());
    assertTrue(Files.size(file) > 0);
    // After an export the source refuses to resume the run itself.
    DaemonProcess.Result again = a.ctl("runs", "resume", run, "--env", "dev");
    assertNotEquals(0, again.exit());
    assertTrue(again.err().contains("exported"), again.err());
    assertTrue(
        a.ctl("runs", "list")
            .out()
            .lines()
            .anyMatch(l -> l.startsWith(run) && l.contains("moved")));

    DaemonProcess.Result imp = b.ctl("runs", "import", file.toString());
    assertEquals(0, imp.exit(), imp.err());
    assertTrue(imp.out().contains(" parked "), imp.out());
    // Importing it again: the node already holds it.
    byte[] bundleBytes = read(file);
    assertEquals(
        Status.Code.ALREADY_EXISTS,
        code(
            () ->
                cb.stub()
                    .importRun(
                        ImportRunRequest.newBuilder()
                            .setBundle(ByteString.copyFrom(bundleBytes))
                            .build())));
    // A drifted environment (b's "dev" differs) and a wider grant are refused; nothing changes.
    DaemonProcess.Result drift = b.ctl("runs", "resume", run, "--env", "dev");
    assertNotEquals(0, drift.exit());
    assertTrue(drift.err().contains("manifest"), drift.err());
    Path wider = Files.writeString(dir.resolve("wider.json"), WIDER);
    DaemonProcess.Result wide =
        b.ctl("runs", "resume", run, "--env", "same", "--grants", wider.toString());
    assertNotEquals(0, wide.exit());
    assertTrue(wide.err().contains("wider"), wide.err());
    assertTrue(
        wide.err().contains("FAILED_PRECONDITION") || wide.err().contains("precondition"),
        wide.err());

    DaemonProcess.Result res = b.ctl("runs", "resume", run, "--env", "same");
    assertEquals(0, res.exit(), res.err());
    JsonNode resumeSeg =
        CanonicalJson.parse(
            res.out()
                .lines()
                .filter(l -> l.startsWith("resume segment "))
                .findFirst()
                .orElseThrow()
                .substring("resume segment ".length()));
    // The park's idle energy is this node's draw over the time the run spent here, apportioned by
    // the memory it holds (a 64 KiB instance's share of the node is tiny), never negative.
    assertTrue(resumeSeg.get("core").get("idle_uj").asLong() >= 0, resumeSeg.toString());
    assertTrue(resumeSeg.get("core").has("idle_provenance"), resumeSeg.toString());
    assertEquals(
        b.publicKey(),
        resumeSeg.get("public_key").textValue(),
        "the resume is signed by the new host");
    // A second resume of the same suspend is refused.
    DaemonProcess.Result second = b.ctl("runs", "resume", run, "--env", "same");
    assertNotEquals(0, second.exit());

    DaemonProcess.Result done = b.ctl("runs", "wait", run, "--json", "--timeout-ms", "240000");
    JsonNode d = CanonicalJson.parse(done.out().strip());
    assertEquals("completed", d.get("state").textValue(), done.out());
    assertEquals("Completed", d.get("outcome").textValue());
    assertEquals(4, d.get("segments").asInt(), "execute, suspend, resume, execute");
    // The same result and an unbroken, gapless log as the unparked run.
    String log = b.ctl("runs", "log", run).out();
    assertEquals(plain.getLog(), log);
    for (int i = 1; i <= TOTAL; i++) {
      assertTrue(log.contains(String.format("count %03d", i)), "gap at " + i + ": " + log);
    }
    // The moved chain verifies with both hosts' keys named, and with its energy total.
    String chain = b.ctl("runs", "show", run, "--export").out();
    DaemonProcess.Result vv =
        DaemonProcess.sandboxctl(
            chain.getBytes(StandardCharsets.UTF_8),
            "verify",
            "-",
            "--signer",
            a.publicKey(),
            "--signer",
            b.publicKey());
    assertEquals(0, vv.exit(), vv.err() + vv.out());
    assertTrue(vv.out().contains("valid: chain of 4 segment(s)"), vv.out());
    // The second resume, now of a completed run, still refused.
    assertEquals(
        Status.Code.FAILED_PRECONDITION,
        code(
            () ->
                cb.stub()
                    .resumeRun(
                        ResumeRunRequest.newBuilder().setRunId(run).setEnv("same").build())));
  }

  // ================================================================ bad bundles

  static byte[] read(Path p) throws Exception {
    return Files.readAllBytes(p);
  }

  static void assertRefusedAndNothingHeld(String run, byte[] bundle, String reasonPart) {
    StatusRuntimeException e = Bundles.refusedImport(cb, bundle, run);
    assertTrue(e.getStatus().getDescription().contains(reasonPart), e.getStatus().getDescription());
    // The daemon keeps serving.
    cb.stub().listRuns(ListRunsRequest.newBuilder().setLimit(1).build());
  }

  @Test
  void everyBadBundleIsRefusedWithItsReasonAndNothingIsImported() throws Exception {
    Path file = dir.resolve("bad.bundle");
    String run = parkedBundle("", file);
    byte[] good = read(file);

    // One flipped byte in the signed core of the first segment.
    assertRefusedAndNothingHeld(
        run,
        Bundles.edit(
            good,
            o -> {
              ObjectNode core = (ObjectNode) o.get("segments").get(0).get("core");
              core.put("at_ms", core.get("at_ms").asLong() ^ 1);
            }),
        "address");
    // A missing blob.
    assertRefusedAndNothingHeld(
        run,
        Bundles.edit(
            good,
            o -> {
              Iterator<String> names = o.get("blobs").fieldNames();
              ((ObjectNode) o.get("blobs")).remove(names.next());
            }),
        "missing");
    // Reordered and duplicated segments.
    List<Consumer<ObjectNode>> outOfSequence =
        List.of(
            o -> {
              ArrayNode s = (ArrayNode) o.get("segments");
              JsonNode first = s.get(0);
              s.set(0, s.get(1));
              s.set(1, first);
            },
            o -> {
              ArrayNode s = (ArrayNode) o.get("segments");
              s.insert(1, s.get(0).deepCopy());
              ((ArrayNode) o.get("logs")).add("");
            });
    for (Consumer<ObjectNode> change : outOfSequence) {
      assertRefusedAndNothingHeld(run, Bundles.edit(good, change), "seq");
    }
    // Another module than the one the receipts name.
    byte[] other = Wat2Wasm.parse(COUNTER.replace("4000000", "4000001"));
    assertRefusedAndNothingHeld(
        run,
        Bundles.edit(good, o -> o.put("module", Base64.getEncoder().encodeToString(other))),
        "module");
    // A blob whose bytes are not its address.
    assertRefusedAndNothingHeld(
        run,
        Bundles.edit(
            good,
            o -> {
              String name = o.get("blobs").fieldNames().next();
              ((ObjectNode) o.get("blobs"))
                  .put(name, Base64.getEncoder().encodeToString("x".getBytes()));
            }),
        "hash");
    // A run id that would name a path on the importing node.
    assertRefusedAndNothingHeld(run, Bundles.edit(good, o -> o.put("run_id", "../../x")), "run_id");
    // Not a bundle at all.
    assertRefusedAndNothingHeld(run, "{\"schema\":\"nope\"}".getBytes(), "schema");

    // The good bundle still imports afterwards, and resumes to completion on node b.
    DurableRunReply imported =
        cb.stub()
            .importRun(ImportRunRequest.newBuilder().setBundle(ByteString.copyFrom(good)).build());
    assertEquals("parked", imported.getState());
    cb.stub().resumeRun(ResumeRunRequest.newBuilder().setRunId(run).build());
    DurableRunReply done =
        cb.stub().waitRun(WaitRunRequest.newBuilder().setRunId(run).setTimeoutMs(240_000).build());
    assertEquals("completed", done.getState());
    String log = cb.stub().getRunLog(DurableRunRequest.newBuilder().setRunId(run).build()).getLog();
    assertTrue(log.contains("count 060"), log);
  }

  @Test
  void aRunParkedAndResumedOnItsOwnNodeCompletesAndAResumeOfARunningRunIsRefused()
      throws Exception {
    String run = detach(ca, "");
    assertEquals(
        Status.Code.FAILED_PRECONDITION,
        code(() -> ca.stub().resumeRun(ResumeRunRequest.newBuilder().setRunId(run).build())));
    assertEquals("parked", Submissions.suspend(ca, run));
    // The wrong environment: it was parked in none.
    assertEquals(
        Status.Code.FAILED_PRECONDITION,
        code(
            () ->
                ca.stub()
                    .resumeRun(ResumeRunRequest.newBuilder().setRunId(run).setEnv("dev").build())));
    ca.stub().resumeRun(ResumeRunRequest.newBuilder().setRunId(run).build());
    DurableRunReply done =
        ca.stub().waitRun(WaitRunRequest.newBuilder().setRunId(run).setTimeoutMs(240_000).build());
    assertEquals("completed", done.getState());
    assertEquals(4, done.getSegments());
    assertEquals(
        Status.Code.NOT_FOUND,
        code(
            () ->
                ca.stub()
                    .suspendRun(DurableRunRequest.newBuilder().setRunId("no-such-run").build())));
    List<String> lines = a.ctl("runs", "list").out().lines().toList();
    assertTrue(
        lines.stream().anyMatch(l -> l.startsWith(run) && l.contains("completed")),
        lines.toString());
  }

  @Test
  void aStoppingDaemonParksItsDurableRunsAndTheyResumeAfterARestart() throws Exception {
    Path state = dir.resolve("c");
    Path socket = dir.resolve("c.sock");
    String run;
    try (DaemonProcess c = DaemonProcess.start(state, socket);
        DaemonClient cc = new DaemonClient(socket)) {
      run = detach(cc, "");
      Thread.sleep(300);
      c.stop();
      assertTrue(c.log().contains("parked 1 durable run(s) before stopping"), c.log());
    }
    try (DaemonProcess c = DaemonProcess.start(state, socket);
        DaemonClient cc = new DaemonClient(socket)) {
      DurableRunReply r = cc.stub().waitRun(WaitRunRequest.newBuilder().setRunId(run).build());
      assertEquals("parked", r.getState(), "parked by the stop, not failed");
      cc.stub().resumeRun(ResumeRunRequest.newBuilder().setRunId(run).build());
      DurableRunReply done =
          cc.stub()
              .waitRun(WaitRunRequest.newBuilder().setRunId(run).setTimeoutMs(240_000).build());
      assertEquals("completed", done.getState());
      String log =
          cc.stub().getRunLog(DurableRunRequest.newBuilder().setRunId(run).build()).getLog();
      for (int i = 1; i <= TOTAL; i++) {
        assertTrue(log.contains(String.format("count %03d", i)), "gap at " + i + ": " + log);
      }
      assertEquals(TOTAL, log.lines().count(), log);
    }
  }
}
