package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.DurableRunReply;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.ExportRunReply;
import java.io.ByteArrayOutputStream;
import java.nio.file.Path;
import java.util.Iterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23: the export hand-off survives a restart. A run whose bundle was streamed whole but not
 * confirmed when the daemon stopped is still exporting after it starts again; a confirm naming
 * another digest is refused naming that digest and moves nothing, one naming the streamed bundle's
 * digest marks it moved; another such run is taken back (reclaimed) after the restart and resumes
 * to completion here.
 */
class ExportRestartTest {
  @TempDir Path dir;

  /** Reads every chunk of an export, without confirming it; returns the last message. */
  static ExportRunReply streamWhole(DaemonClient c, String run, ByteArrayOutputStream into) {
    Iterator<ExportRunReply> it =
        c.stub().exportRun(DurableRunRequest.newBuilder().setRunId(run).build());
    ExportRunReply last = null;
    while (it.hasNext()) {
      last = it.next();
      into.writeBytes(last.getBundle().toByteArray());
    }
    assertTrue(last != null && last.getLast(), "no last message");
    return last;
  }

  @Test
  void anExportStreamedBeforeARestartIsConfirmedOrTakenBackAfterIt() throws Exception {
    Path state = dir.resolve("a");
    Path socket = dir.resolve("a.sock");
    String confirmed;
    String reclaimed;
    ExportRunReply last;
    ByteArrayOutputStream bundle = new ByteArrayOutputStream();
    try (DaemonProcess d = DaemonProcess.start(state, socket);
        DaemonClient c = new DaemonClient(d.socket)) {
      confirmed = BundleHandoffTest.detached(c, DurableRunTest.COUNTER, DurableRunTest.GRANTS);
      reclaimed = BundleHandoffTest.detached(c, DurableRunTest.COUNTER, DurableRunTest.GRANTS);
      BundleHandoffTest.suspend(c, confirmed);
      BundleHandoffTest.suspend(c, reclaimed);
      last = streamWhole(c, confirmed, bundle);
      streamWhole(c, reclaimed, new ByteArrayOutputStream());
      assertEquals("exporting", BundleHandoffTest.state(c, confirmed));
      assertEquals("exporting", BundleHandoffTest.state(c, reclaimed));
    }
    assertEquals(last.getSize(), bundle.size());
    assertEquals(io.sandboxd.attest.Blake3.hex(bundle.toByteArray()), last.getDigest());

    try (DaemonProcess d = DaemonProcess.start(state, socket);
        DaemonClient c = new DaemonClient(d.socket)) {
      assertEquals("exporting", BundleHandoffTest.state(c, confirmed), d.log());
      // Another digest: refused, naming it and the bundle's; the run stays exporting.
      String wrongDigest = "ab".repeat(32);
      StatusRuntimeException wrong =
          assertThrows(
              StatusRuntimeException.class,
              () -> BundleHandoffTest.confirmExport(c, confirmed, wrongDigest));
      assertEquals(Status.Code.FAILED_PRECONDITION, wrong.getStatus().getCode(), wrong.toString());
      String why = wrong.getStatus().getDescription();
      assertTrue(why.contains("digest: " + wrongDigest) && why.contains(last.getDigest()), why);
      assertEquals("exporting", BundleHandoffTest.state(c, confirmed));

      DurableRunReply moved = BundleHandoffTest.confirmExport(c, confirmed, last.getDigest());
      assertEquals("moved", moved.getState());
      assertEquals("moved", BundleHandoffTest.state(c, confirmed));
      // Confirmed once: a second confirm (or a reclaim) changes nothing.
      assertEquals(
          Status.Code.FAILED_PRECONDITION,
          assertThrows(
                  StatusRuntimeException.class,
                  () -> BundleHandoffTest.confirmExport(c, confirmed, last.getDigest()))
              .getStatus()
              .getCode());
      String notBack = BundleHandoffTest.refusal(d.ctl("runs", "reclaim", confirmed));
      assertTrue(notBack.contains("only an unconfirmed export"), notBack);

      // The other export is taken back after the restart, and the run finishes here.
      assertEquals("exporting", BundleHandoffTest.state(c, reclaimed));
      DaemonProcess.Result back = d.ctl("runs", "reclaim", reclaimed);
      assertEquals(0, back.exit(), back.err());
      assertEquals("parked", BundleHandoffTest.state(c, reclaimed));
      d.resumeToCompletion(reclaimed);
      // Moved away and finished: neither run's snapshot is held any more.
      assertEquals(0, SnapshotRoomTest.snapshotBytes(d));
      assertEquals(0, SnapshotRoomTest.packBytes(state), "snapshot packs left");
    }
  }
}
