package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.google.protobuf.ByteString;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23 item 6 (rest) through the running daemon: durable runs are in the signed store head, so
 * `sandboxctl store verify` of an untouched store passes, and deleting a durable run (its row, or
 * everything it stored), one of its segments or one of its receipts behind the node's back is
 * found: the daemon refuses to start on such a store naming the run, and with --serve-damaged-store
 * `sandboxctl store verify` exits 1 naming the run and what was deleted.
 */
class DurableStoreTest {
  @TempDir static Path dir;
  static Path pristine;
  static String run;
  static Path bundle;

  @BeforeAll
  static void start() throws Exception {
    pristine = dir.resolve("pristine");
    try (DaemonProcess d = DaemonProcess.start(pristine, dir.resolve("p.sock"));
        DaemonClient c = new DaemonClient(d.socket)) {
      run =
          c.stub()
              .submit(
                  SubmitRequest.newBuilder()
                      .setModule(ByteString.copyFrom(Wat2Wasm.parse(DurableRunTest.COUNTER)))
                      .setGrantsJson(DurableRunTest.GRANTS)
                      .setEntry("step")
                      .setDetach(true)
                      .build())
              .getRunId();
      assertEquals(
          "parked",
          c.stub().suspendRun(DurableRunRequest.newBuilder().setRunId(run).build()).getState());
      String moved =
          c.stub()
              .submit(
                  SubmitRequest.newBuilder()
                      .setModule(ByteString.copyFrom(Wat2Wasm.parse(DurableRunTest.COUNTER)))
                      .setGrantsJson(DurableRunTest.GRANTS)
                      .setEntry("step")
                      .setDetach(true)
                      .build())
              .getRunId();
      c.stub().suspendRun(DurableRunRequest.newBuilder().setRunId(moved).build());
      bundle = dir.resolve("moved.bundle");
      DaemonProcess.Result ex =
          DaemonProcess.sandboxctl(
              null,
              "runs",
              "export",
              moved,
              "--bundle",
              bundle.toString(),
              "--socket",
              d.socket.toString());
      assertEquals(0, ex.exit(), ex.err());
      DaemonProcess.Result v =
          DaemonProcess.sandboxctl(null, "store", "verify", "--socket", d.socket.toString());
      assertEquals(0, v.exit(), v.out() + v.err());
    }
  }

  @Test
  void anImportThatWouldExceedStoreMaxBytesIsRefusedNamingItAndNothingIsImported()
      throws Exception {
    Path cfg =
        java.nio.file.Files.writeString(dir.resolve("tight.json"), "{\"store\":{\"max_bytes\":1}}");
    try (DaemonProcess d =
            DaemonProcess.start(
                dir.resolve("tight"), dir.resolve("tight.sock"), "--config", cfg.toString());
        DaemonClient c = new DaemonClient(d.socket)) {
      DaemonProcess.Result r =
          DaemonProcess.sandboxctl(
              null, "runs", "import", bundle.toString(), "--socket", d.socket.toString());
      assertEquals(2, r.exit(), r.out() + r.err());
      assertTrue(
          r.err().contains("store.max_bytes") && r.err().contains("nothing imported"), r.err());
      String id =
          io.sandboxd.attest.CanonicalJson.parse(java.nio.file.Files.readAllBytes(bundle))
              .get("run_id")
              .asText();
      DaemonProcess.Result wait =
          DaemonProcess.sandboxctl(
              null, "runs", "wait", id, "--timeout-ms", "1", "--socket", d.socket.toString());
      assertEquals(2, wait.exit(), "nothing half-imported: " + wait.out());
      DaemonProcess.Result status =
          DaemonProcess.sandboxctl(null, "status", "--socket", d.socket.toString());
      assertEquals(0, status.exit(), "still serving: " + status.err());
    }
  }

  @AfterAll
  static void done() {}

  static void sql(Path state, String... statements) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + state.resolve("runs.db"))) {
      for (String s : statements) {
        try (PreparedStatement st = c.prepareStatement(s)) {
          assertTrue(st.executeUpdate() > 0, "changed nothing: " + s);
        }
      }
    }
  }

  /** `store verify` on {@code state} served despite its damage: exit 1; what it said. */
  static String damage(Path state) throws Exception {
    IllegalStateException refused =
        assertThrows(
            IllegalStateException.class,
            () -> DaemonProcess.start(state, state.resolveSibling(state.getFileName() + ".sock")));
    assertTrue(refused.getMessage().contains(run), refused.getMessage());
    try (DaemonProcess d =
        DaemonProcess.start(
            state,
            state.resolveSibling(state.getFileName() + "-served.sock"),
            "--serve-damaged-store")) {
      DaemonProcess.Result v =
          DaemonProcess.sandboxctl(null, "store", "verify", "--socket", d.socket.toString());
      assertEquals(1, v.exit(), v.out() + v.err());
      return v.err();
    }
  }

  @Test
  void deletingADurableRunOrItsSegmentsOrReceiptsIsDetected() throws Exception {
    String q = "'" + run + "'";
    Path row = StoppedState.copy(pristine, dir.resolve("row"));
    sql(row, "DELETE FROM durable_runs WHERE run_id = " + q);
    String said = damage(row);
    assertTrue(said.contains(run) && said.contains("its row was deleted"), said);

    Path all = StoppedState.copy(pristine, dir.resolve("all"));
    sql(
        all,
        "DELETE FROM durable_runs WHERE run_id = " + q,
        "DELETE FROM durable_segments WHERE run_id = " + q,
        "DELETE FROM durable_records WHERE run_id = " + q);
    said = damage(all);
    assertTrue(said.contains(run) && said.contains("deleted"), said);

    Path ledgerToo = StoppedState.copy(pristine, dir.resolve("ledger"));
    sql(
        ledgerToo,
        "DELETE FROM durable_runs WHERE run_id = " + q,
        "DELETE FROM durable_segments WHERE run_id = " + q,
        "DELETE FROM durable_records WHERE run_id = " + q,
        "DELETE FROM durable_ledger WHERE run_id = " + q);
    IllegalStateException refused =
        assertThrows(
            IllegalStateException.class,
            () -> DaemonProcess.start(ledgerToo, dir.resolve("ledger.sock")));
    assertTrue(
        refused.getMessage().contains("durable segment(s)")
            && refused.getMessage().contains("deleted"),
        refused.getMessage());

    Path segment = StoppedState.copy(pristine, dir.resolve("segment"));
    sql(segment, "DELETE FROM durable_segments WHERE run_id = " + q + " AND seq = 1");
    said = damage(segment);
    assertTrue(said.contains(run) && said.contains("segment seq 1"), said);

    Path receipt = StoppedState.copy(pristine, dir.resolve("receipt"));
    sql(
        receipt,
        "DELETE FROM durable_records WHERE run_id = "
            + q
            + " AND envelope LIKE '%sandbox.receipt/1%'");
    said = damage(receipt);
    assertTrue(said.contains(run) && said.contains("receipt"), said);
  }
}
