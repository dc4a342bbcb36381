package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.daemon.DaemonClient;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
          Submissions.detached(
              c, Wat2Wasm.parse(DurableRunTest.COUNTER), DurableRunTest.GRANTS, "step");
      assertEquals("parked", Submissions.suspend(c, run));
      String moved =
          Submissions.detached(
              c, Wat2Wasm.parse(DurableRunTest.COUNTER), DurableRunTest.GRANTS, "step");
      Submissions.suspend(c, moved);
      bundle = dir.resolve("moved.bundle");
      DaemonProcess.Result ex = d.ctl("runs", "export", moved, "--bundle", bundle.toString());
      assertEquals(0, ex.exit(), ex.err());
      DaemonProcess.Result v = d.ctl("store", "verify");
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
      DaemonProcess.Result r = d.ctl("runs", "import", bundle.toString());
      assertEquals(2, r.exit(), r.out() + r.err());
      assertTrue(
          r.err().contains("store.max_bytes") && r.err().contains("nothing imported"), r.err());
      String id =
          io.sandboxd.attest.CanonicalJson.parse(java.nio.file.Files.readAllBytes(bundle))
              .get("run_id")
              .asText();
      DaemonProcess.Result wait = d.ctl("runs", "wait", id, "--timeout-ms", "1");
      assertEquals(2, wait.exit(), "nothing half-imported: " + wait.out());
      DaemonProcess.Result status = d.ctl("status");
      assertEquals(0, status.exit(), "still serving: " + status.err());
    }
  }

  @AfterAll
  static void done() {}

  /** `store verify` on {@code state} served despite its damage: exit 1; what it said. */
  static String damage(Path state) throws Exception {
    String refused = DaemonProcess.refusedStart(state);
    assertTrue(refused.contains(run), refused);
    try (DaemonProcess d =
        DaemonProcess.start(
            state,
            state.resolveSibling(state.getFileName() + "-served.sock"),
            "--serve-damaged-store")) {
      DaemonProcess.Result v = d.ctl("store", "verify");
      assertEquals(1, v.exit(), v.out() + v.err());
      return v.err();
    }
  }

  @Test
  void deletingADurableRunOrItsSegmentsOrReceiptsIsDetected() throws Exception {
    String q = "'" + run + "'";
    Path row =
        StoppedState.tamperedCopy(
            pristine, dir.resolve("row"), "DELETE FROM durable_runs WHERE run_id = " + q);
    String said = damage(row);
    assertTrue(said.contains(run) && said.contains("its row was deleted"), said);

    String[] everyRecord = {
      "DELETE FROM durable_runs WHERE run_id = " + q,
      "DELETE FROM durable_segments WHERE run_id = " + q,
      "DELETE FROM durable_records WHERE run_id = " + q
    };
    Path all = StoppedState.tamperedCopy(pristine, dir.resolve("all"), everyRecord);
    said = damage(all);
    assertTrue(said.contains(run) && said.contains("deleted"), said);

    List<String> andLedger = new ArrayList<>(List.of(everyRecord));
    andLedger.add("DELETE FROM durable_ledger WHERE run_id = " + q);
    Path ledgerToo =
        StoppedState.tamperedCopy(
            pristine, dir.resolve("ledger"), andLedger.toArray(new String[0]));
    String refused = DaemonProcess.refusedStart(ledgerToo);
    assertTrue(refused.contains("durable segment(s)") && refused.contains("deleted"), refused);

    Path segment =
        StoppedState.tamperedCopy(
            pristine,
            dir.resolve("segment"),
            "DELETE FROM durable_segments WHERE run_id = " + q + " AND seq = 1");
    said = damage(segment);
    assertTrue(said.contains(run) && said.contains("segment seq 1"), said);

    Path receipt =
        StoppedState.tamperedCopy(
            pristine,
            dir.resolve("receipt"),
            "DELETE FROM durable_records WHERE run_id = "
                + q
                + " AND envelope LIKE '%sandbox.receipt/1%'");
    said = damage(receipt);
    assertTrue(said.contains(run) && said.contains("receipt"), said);
  }
}
