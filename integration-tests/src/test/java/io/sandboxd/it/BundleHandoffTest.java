package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ConfirmExportRequest;
import io.sandboxd.daemon.rpc.DurableRunReply;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.ExportRunReply;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23 item 3 (rest) through three running daemons: an export is streamed and confirmed only
 * once the CLI has written the bundle whole, so a bundle larger than the 64 MiB message limit moves
 * (and resumes on its destination), an export interrupted mid-stream leaves the run parked and
 * resumable here, an unconfirmed one is refused for resume until an operator takes it back; a
 * bundle imported and resumed on its destination is refused by a third node naming the key; an
 * edited bundle is refused whole. Each segment of the moved chain signs the run's cumulative budget
 * and `sandboxctl verify` accepts the chain (item 1).
 */
class BundleHandoffTest {
  /** 1100 distinct 64 KiB pages (about 72 MB, some 96 MB as base64 in a bundle). */
  static final int PAGES = 1100;

  /** Fills every page once (distinct first words), then counts steps, spinning in each. */
  static final String BIG =
      "(module\n"
          + "  (memory (export \"memory\") "
          + PAGES
          + " "
          + PAGES
          + ")\n"
          + "  (global $steps (mut i32) (i32.const 0))\n"
          + "  (func $spin (param $n i32) (local $i i32)\n"
          + "    (block $out (loop $l\n"
          + "      (br_if $out (i32.ge_u (local.get $i) (local.get $n)))\n"
          + "      (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
          + "      (br $l))))\n"
          + "  (func (export \"step\") (result i32) (local $p i32)\n"
          + "    (if (i32.eqz (global.get $steps)) (then\n"
          + "      (block $out (loop $l\n"
          + "        (br_if $out (i32.ge_u (local.get $p) (i32.const "
          + PAGES
          + ")))\n"
          + "        (i32.store (i32.mul (local.get $p) (i32.const 65536))\n"
          + "          (i32.add (local.get $p) (i32.const 1)))\n"
          + "        (local.set $p (i32.add (local.get $p) (i32.const 1)))\n"
          + "        (br $l)))))\n"
          + "    (global.set $steps (i32.add (global.get $steps) (i32.const 1)))\n"
          + "    (call $spin (i32.const 40000000))\n"
          + "    (i32.lt_u (global.get $steps) (i32.const 80)))\n"
          + ")\n";

  static final String BIG_GRANTS =
      DurableRunTest.GRANTS.replace("\"memory_bytes\":1048576", "\"memory_bytes\":83886080");

  @TempDir static Path dir;
  static DaemonProcess a;
  static DaemonProcess b;
  static DaemonProcess c;

  @BeforeAll
  static void start() throws Exception {
    a = DaemonProcess.start(dir.resolve("a"), dir.resolve("a.sock"));
    b = DaemonProcess.start(dir.resolve("b"), dir.resolve("b.sock"));
    c = DaemonProcess.start(dir.resolve("c"), dir.resolve("c.sock"));
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(a, b, c);
  }

  static String detached(DaemonClient node, String wat, String grants) throws Exception {
    return Submissions.detached(node, Wat2Wasm.parse(wat), grants, "step");
  }

  /**
   * Confirms on {@code node} that the export of {@code run} was written whole as {@code digest}.
   */
  static DurableRunReply confirmExport(DaemonClient node, String run, String digest) {
    return node.stub()
        .confirmExport(ConfirmExportRequest.newBuilder().setRunId(run).setDigest(digest).build());
  }

  static String state(DaemonClient node, String run) {
    return Submissions.waitState(node, run, 1);
  }

  static void suspend(DaemonClient node, String run) {
    assertEquals("parked", Submissions.suspend(node, run));
  }

  /** A detached run of {@code wat} on {@code node}, suspended until it parked: its id. */
  static String parked(DaemonClient node, String wat, String grants) throws Exception {
    String run = detached(node, wat, grants);
    suspend(node, run);
    return run;
  }

  static String refusal(DaemonProcess.Result r) {
    assertEquals(2, r.exit(), r.out() + r.err());
    return r.err();
  }

  @Test
  void aBundleOverTheMessageLimitMovesAndAnInterruptedExportLeavesTheRunHere() throws Exception {
    String run = parked(a.client(), BIG, BIG_GRANTS);

    // Interrupted: the client reads one chunk and goes; the run is parked here again.
    Context.CancellableContext cancellable = Context.current().withCancellation();
    Context previous = cancellable.attach();
    try {
      Iterator<ExportRunReply> it =
          a.client().stub().exportRun(DurableRunRequest.newBuilder().setRunId(run).build());
      ExportRunReply first = it.next();
      assertFalse(first.getLast());
      assertTrue(first.getBundle().size() > 0);
    } finally {
      cancellable.detach(previous);
      cancellable.cancel(null);
    }
    long deadline = System.currentTimeMillis() + 30_000;
    while (!state(a.client(), run).equals("parked") && System.currentTimeMillis() < deadline) {
      Thread.sleep(50);
    }
    assertEquals("parked", state(a.client(), run), a.log());
    DaemonProcess.Result resumed = a.ctl("runs", "resume", run);
    assertEquals(0, resumed.exit(), resumed.err());
    suspend(a.client(), run);

    // Whole: streamed, written, confirmed; larger than one message may be.
    Path file = dir.resolve("big.bundle");
    DaemonProcess.Result ex =
        a.ctl("runs", "export", run, "--bundle", file.toString(), "--to", b.publicKey());
    assertEquals(0, ex.exit(), ex.err());
    long size = Files.size(file);
    assertTrue(size > 64L << 20, "bundle of " + size + " bytes");
    assertEquals("moved", state(a.client(), run));
    assertTrue(refusal(a.ctl("runs", "resume", run)).contains("exported"));

    DaemonProcess.Result imported = b.ctl("runs", "import", file.toString());
    assertEquals(0, imported.exit(), imported.err());
    b.resumeToCompletion(run);
  }

  @Test
  void anUnconfirmedExportIsNeitherResumableNorMovedUntilTakenBack() throws Exception {
    String run = parked(a.client(), DurableRunTest.COUNTER, DurableRunTest.GRANTS);
    // A bundle the CLI cannot write: the export is taken back at once, the run parked here.
    String unwritable =
        refusal(a.ctl("runs", "export", run, "--bundle", dir.resolve("no/such/dir/b").toString()));
    assertTrue(
        unwritable.contains("cannot write") && unwritable.contains("taken back"), unwritable);
    assertEquals("parked", state(a.client(), run));
    // Every chunk read, but no confirmation (as if the CLI died before its fsync).
    Iterator<ExportRunReply> it =
        a.client().stub().exportRun(DurableRunRequest.newBuilder().setRunId(run).build());
    ExportRunReply last = null;
    while (it.hasNext()) {
      last = it.next();
    }
    assertTrue(last != null && last.getLast() && last.getDigest().length() == 64);
    assertEquals("exporting", state(a.client(), run));
    String why = refusal(a.ctl("runs", "resume", run));
    assertTrue(why.contains("exporting") && why.contains("runs reclaim " + run), why);
    assertTrue(refusal(a.ctl("runs", "export", run, "--bundle", "x")).contains("exporting"));
    // A confirmation naming another digest moves nothing.
    StatusRuntimeException wrong =
        assertThrows(
            StatusRuntimeException.class, () -> confirmExport(a.client(), run, "00".repeat(32)));
    assertEquals(Status.Code.FAILED_PRECONDITION, wrong.getStatus().getCode(), wrong.getMessage());
    assertTrue(wrong.getStatus().getDescription().contains("digest"), wrong.getMessage());

    DaemonProcess.Result back = a.ctl("runs", "reclaim", run);
    assertEquals(0, back.exit(), back.err());
    assertTrue(back.out().contains(" parked "), back.out());
    a.resumeToCompletion(run);
    // Nothing left to take back.
    assertTrue(refusal(a.ctl("runs", "reclaim", run)).contains("only an unconfirmed export"));
  }

  @Test
  void aBundleResumedOnItsDestinationIsRefusedByAnotherNodeAndAnEditedOneByAll() throws Exception {
    String run = parked(a.client(), DurableRunTest.COUNTER, DurableRunTest.GRANTS);
    Path file = dir.resolve(run + ".bundle");
    String keyB = b.publicKey();
    DaemonProcess.Result ex =
        a.ctl("runs", "export", run, "--bundle", file.toString(), "--to", keyB);
    assertEquals(0, ex.exit(), ex.err());

    // The moved chain as exported: each segment signs the run's cumulative budget, and the
    // figures add up with the receipts (checked here and by `sandboxctl verify`).
    JsonNode bundle = CanonicalJson.parse(Files.readAllBytes(file));
    ArrayNode evidence = CanonicalJson.mapper().createArrayNode();
    bundle.get("records").forEach(evidence::add);
    bundle.get("segments").forEach(evidence::add);
    java.util.Map<String, JsonNode> receipts = new java.util.HashMap<>();
    for (JsonNode r : bundle.get("records")) {
      if (r.get("core").get("schema").asText().equals("sandbox.receipt/1")) {
        receipts.put(io.sandboxd.attest.Envelope.fromJson(r).address(), r.get("core"));
      }
    }
    long ms = 0;
    for (JsonNode s : bundle.get("segments")) {
      JsonNode core = s.get("core");
      if (!core.get("receipt").isNull()) {
        ms += receipts.get(core.get("receipt").asText()).get("cpu_time_ms").asLong();
      }
      assertEquals(ms, core.get("budget").get("consumed").get("cpu_time_ms").asLong(), core + "");
      assertEquals(600000, core.get("budget").get("granted").get("cpu_time_ms").asLong());
    }
    Path chain = Files.writeString(dir.resolve(run + ".chain.json"), evidence.toString());
    DaemonProcess.Result verified =
        DaemonProcess.sandboxctl(null, "verify", chain.toString(), "--signer", a.publicKey());
    assertEquals(0, verified.exit(), verified.out() + verified.err());

    // Edited in transit (a budget figure lowered): refused whole, nothing imported.
    ObjectNode edited = (ObjectNode) bundle.deepCopy();
    ObjectNode core0 = (ObjectNode) edited.get("segments").get(0).get("core");
    ((ObjectNode) core0.get("budget").get("consumed")).put("cpu_time_ms", 0);
    Path bad = Files.write(dir.resolve(run + ".edited"), CanonicalJson.canonicalize(edited));
    String whyEdited = refusal(b.ctl("runs", "import", bad.toString()));
    assertTrue(whyEdited.contains("bundle refused, nothing imported"), whyEdited);
    assertEquals(
        Status.Code.NOT_FOUND,
        assertThrows(StatusRuntimeException.class, () -> state(b.client(), run))
            .getStatus()
            .getCode());

    assertEquals(0, b.ctl("runs", "import", file.toString()).exit());
    assertEquals(0, b.ctl("runs", "resume", run).exit());
    // The same bundle on a third node: refused, naming the node it is for (no fork).
    String whyC = refusal(c.ctl("runs", "import", file.toString()));
    assertTrue(
        whyC.contains("destination: the bundle is for node key " + keyB)
            && whyC.contains("this node is " + c.publicKey()),
        whyC);
    b.awaitCompletion(run);
  }
}
