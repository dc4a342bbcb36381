package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.DurableRunReply;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.WaitRunRequest;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A durable run's row is stored before its first segment is (the start is answered once it is on
 * disk), so until it parks or ends it has no signed record. Through the real daemon: `sandboxctl
 * store verify` while runs are in their first segment passes, and so does the store of a daemon
 * killed (SIGKILL) while they ran, once its next start has settled them as failed. A unit whose
 * park cannot be stored (its storage deeper than a snapshot takes) ends failed, its reason signed.
 */
class DurableFirstSegmentTest {
  @TempDir Path dir;

  /** Steps for ever, each spinning (tens of ms compiled): it ends only when told to. */
  static final String ENDLESS =
      "(module\n"
          + "  (memory (export \"memory\") 1 1)\n"
          + "  (func (export \"step\") (result i32) (local $i i32)\n"
          + "    (block $out (loop $l\n"
          + "      (br_if $out (i32.ge_u (local.get $i) (i32.const 40000000)))\n"
          + "      (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
          + "      (br $l)))\n"
          + "    (i32.const 1)))\n";

  /** The path a deep unit writes: 70 directories below `data`, past the snapshot tree's 64. */
  static final String DEEP_PATH = "data/" + "d/".repeat(70) + "f";

  /**
   * Writes one file {@link #DEEP_PATH} deep in its storage (traps if refused), then steps for ever:
   * a park would have to store a tree deeper than the snapshot store takes.
   */
  static final String DEEP =
      "(module\n"
          + "  (import \"sandbox\" \"storage_write\"\n"
          + "    (func $write (param i32 i32 i64 i32 i32) (result i32)))\n"
          + "  (memory (export \"memory\") 1 1)\n"
          + "  (global $wrote (mut i32) (i32.const 0))\n"
          + "  (data (i32.const 0) \""
          + DEEP_PATH
          + "\")\n"
          + "  (data (i32.const 1024) \"x\")\n"
          + "  (func (export \"step\") (result i32) (local $i i32)\n"
          + "    (if (i32.eqz (global.get $wrote)) (then\n"
          + "      (if (call $write (i32.const 0) (i32.const "
          + DEEP_PATH.length()
          + ") (i64.const 0) (i32.const 1024) (i32.const 1)) (then unreachable))\n"
          + "      (global.set $wrote (i32.const 1))))\n"
          + "    (block $out (loop $l\n"
          + "      (br_if $out (i32.ge_u (local.get $i) (i32.const 40000000)))\n"
          + "      (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
          + "      (br $l)))\n"
          + "    (i32.const 1)))\n";

  @Test
  void aParkWhoseStorageTreeTheSnapshotStoreRefusesEndsTheRunWithItsReasonSigned()
      throws Exception {
    String grants =
        DurableRunTest.GRANTS.replace(
            "\"storage\":{\"read\":[],\"write\":[]",
            "\"storage\":{\"read\":[],\"write\":[\"data/**\"]");
    assertTrue(grants.contains("data/**"), grants);
    try (DaemonProcess d = DaemonProcess.start(dir.resolve("deep"), dir.resolve("deep.sock"));
        DaemonClient c = new DaemonClient(d.socket)) {
      String run = BundleHandoffTest.detached(c, DEEP, grants);
      DurableRunReply r = c.stub().suspendRun(DurableRunRequest.newBuilder().setRunId(run).build());
      assertEquals("failed", r.getState(), r.getOutcomeJson() + d.log());
      assertTrue(
          r.getOutcomeJson().contains("parking run " + run + ": its snapshot could not be stored")
              && r.getOutcomeJson().contains("is deeper than 64"),
          r.getOutcomeJson());
      assertFalse(r.getOutcomeJson().contains(dir.toString()), r.getOutcomeJson());
      assertEquals(1, r.getSegments(), "the ending execute segment is stored");
      DaemonProcess.Result verified = d.ctl("store", "verify");
      assertEquals(0, verified.exit(), verified.out() + verified.err());
      // The node goes on parking runs.
      String next = BundleHandoffTest.parked(c, ENDLESS, DurableRunTest.GRANTS);
      assertEquals("parked", BundleHandoffTest.state(c, next));
    }
  }

  @Test
  void runsInTheirFirstSegmentVerifyAndSoDoTheyAfterTheDaemonIsKilled() throws Exception {
    Path state = dir.resolve("state");
    Path socket = dir.resolve("d.sock");
    String first;
    String second;
    try (DaemonProcess d = DaemonProcess.start(state, socket);
        DaemonClient c = new DaemonClient(socket)) {
      first = BundleHandoffTest.detached(c, ENDLESS, DurableRunTest.GRANTS);
      second = BundleHandoffTest.detached(c, ENDLESS, DurableRunTest.GRANTS);
      DaemonProcess.Result verified = d.ctl("store", "verify");
      assertEquals(0, verified.exit(), verified.out() + verified.err());
      assertEquals("running", BundleHandoffTest.state(c, first), "still in its first segment");
      assertEquals("running", BundleHandoffTest.state(c, second));

      d.process.destroyForcibly();
      assertTrue(d.process.waitFor(30, TimeUnit.SECONDS));
    }
    try (DaemonProcess d = DaemonProcess.start(state, socket);
        DaemonClient c = new DaemonClient(socket)) {
      for (String run : new String[] {first, second}) {
        DurableRunReply r =
            c.stub().waitRun(WaitRunRequest.newBuilder().setRunId(run).setTimeoutMs(1).build());
        assertEquals("failed", r.getState(), run);
        assertTrue(r.getOutcomeJson().contains("the daemon stopped"), r.getOutcomeJson());
        assertEquals(0, r.getSegments(), "it never stored a segment");
      }
      DaemonProcess.Result verified = d.ctl("store", "verify");
      assertEquals(0, verified.exit(), verified.out() + verified.err());

      // A run of the restarted daemon parks at its first boundary and is stored whole.
      String third = BundleHandoffTest.detached(c, ENDLESS, DurableRunTest.GRANTS);
      assertEquals("parked", Submissions.suspend(c, third));
      assertEquals(
          2,
          c.stub()
              .waitRun(WaitRunRequest.newBuilder().setRunId(third).setTimeoutMs(1).build())
              .getSegments());
      verified = d.ctl("store", "verify");
      assertEquals(0, verified.exit(), verified.out() + verified.err());
      assertFalse(d.log().contains("damage"), d.log());
    }
  }
}
