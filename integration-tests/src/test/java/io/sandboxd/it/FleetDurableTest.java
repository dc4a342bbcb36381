package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Receipt;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ResumeRunRequest;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23 item 6 (fleet) through the running daemon: a detached run's receipts, segment by
 * segment, are in `fleet aggregate`'s durable part and its totals; `fleet prove` proves them there
 * and `fleet verify` accepts the proof offline, and a later aggregate extends the durable part
 * (consistency); a changed receipt address in the proof fails `fleet verify`, and a durable receipt
 * edited in the store is refused by the daemon naming its durable-ledger position.
 */
class FleetDurableTest {
  /** Completes at its first step: a detached run of one execute segment. */
  static final String QUICK =
      "(module (memory (export \"memory\") 1 1) (func (export \"step\") (result i32)"
          + " (i32.const 0)))";

  @TempDir Path dir;

  private Path write(String name, String text) throws Exception {
    Path p = dir.resolve(name);
    Files.writeString(p, text, StandardCharsets.UTF_8);
    return p;
  }

  private static DaemonProcess.Result ctl(String... args) throws Exception {
    return DaemonProcess.sandboxctl(null, args);
  }

  private static String detach(DaemonClient c, byte[] module) {
    return Submissions.detached(c, module, DurableRunTest.GRANTS, "step");
  }

  private static String waitDone(DaemonClient c, String run) {
    String state = Submissions.waitState(c, run, 240_000);
    assertEquals("completed", state, run);
    return state;
  }

  /** The durable run's receipts as the store holds them (read beside the running daemon). */
  private static List<Receipt> durableReceipts(Path state, String run) throws Exception {
    List<Receipt> out = new ArrayList<>();
    for (List<String> row :
        StoppedState.rows(
            state,
            "SELECT envelope FROM durable_records WHERE run_id = ?"
                + " AND envelope LIKE '%sandbox.receipt/1%' ORDER BY rowid",
            run)) {
      out.add(Receipt.fromCore(Envelope.fromJson(CanonicalJson.parse(row.get(0))).core()));
    }
    return out;
  }

  @Test
  void aDetachedRunsReceiptsAreInTheAggregateAndItsProofsAndTamperingIsRefused() throws Exception {
    byte[] hello = Submissions.exampleUnit("hello");
    String grants = Submissions.exampleGrants("hello");
    byte[] counter = Wat2Wasm.parse(DurableRunTest.COUNTER);
    Path state = dir.resolve("state");
    Path sock = dir.resolve("run/sandboxd.sock");
    String s = sock.toString();
    String pk;
    String durable;
    String fleetId;
    Path a1;
    try (DaemonProcess daemon = DaemonProcess.start(state, sock);
        DaemonClient c = new DaemonClient(sock)) {
      SubmitReply plain = Submissions.submit(c, hello, grants);
      Envelope plainReceipt = Envelope.fromJson(CanonicalJson.parse(plain.getReceipt()));
      pk = plainReceipt.publicKey();
      Receipt plainCore = Receipt.fromCore(plainReceipt.core());

      // A detached tenant: parked mid-way (execute + suspend), resumed, completed (execute).
      durable = detach(c, counter);
      assertEquals("parked", Submissions.suspend(c, durable));
      c.stub().resumeRun(ResumeRunRequest.newBuilder().setRunId(durable).build());
      waitDone(c, durable);
      List<Receipt> receipts = durableReceipts(state, durable);
      assertEquals(2, receipts.size(), "one receipt per execute segment");

      DaemonProcess.Result agg = ctl("fleet", "aggregate", "--socket", s);
      FleetLogTest.ok(agg);
      a1 = write("a1.json", agg.out());
      JsonNode core = CanonicalJson.parse(agg.out()).get("core");
      fleetId = core.get("fleet_id").textValue();
      assertEquals(1, core.get("tree_size").longValue(), "the single-step run");
      JsonNode part = core.get("durable");
      assertTrue(part != null && part.isObject(), core.toString());
      assertEquals(0, part.get("first_position").longValue());
      assertEquals(2, part.get("tree_size").longValue());
      long total = plainCore.totalUj();
      long cpu = plainCore.energy().get(DeviceClass.Cpu).uj();
      long first = plainCore.startedMs();
      long last = plainCore.endedMs();
      for (Receipt r : receipts) {
        total += r.totalUj();
        cpu += r.energy().get(DeviceClass.Cpu).uj();
        first = Math.min(first, r.startedMs());
        last = Math.max(last, r.endedMs());
      }
      assertTrue(total > plainCore.totalUj(), "the detached run consumed energy: " + receipts);
      assertEquals(total, core.get("total_uj").longValue(), core.toString());
      assertEquals(cpu, core.get("energy_uj").get("Cpu").longValue(), core.toString());
      assertEquals(first, core.get("first_ms").longValue());
      assertEquals(last, core.get("last_ms").longValue());

      // The detached run's receipts proven in the durable tree; verified offline.
      DaemonProcess.Result fp =
          ctl("fleet", "prove", durable, "--aggregate", a1.toString(), "--socket", s);
      FleetLogTest.ok(fp);
      JsonNode proof = CanonicalJson.parse(fp.out());
      assertEquals(2, proof.get("receipts").size(), fp.out());
      for (JsonNode e : proof.get("receipts")) {
        assertEquals("durable", e.get("tree").textValue(), fp.out());
      }
      Path p1 = write("p1.json", fp.out());
      DaemonProcess.Result fv =
          FleetLogTest.fleetVerify(p1.toString(), a1.toString(), fleetId + "=" + pk);
      FleetLogTest.ok(fv);
      assertTrue(fv.out().contains(durable) && fv.out().contains("durable leaf 1"), fv.out());
      // The single-step run is still proven in the main tree, as before.
      DaemonProcess.Result mp =
          ctl("fleet", "prove", plain.getRunId(), "--aggregate", a1.toString(), "--socket", s);
      FleetLogTest.ok(mp);
      assertFalse(mp.out().contains("\"tree\""), mp.out());
      FleetLogTest.ok(
          FleetLogTest.fleetVerify(
              write("mp.json", mp.out()).toString(), a1.toString(), fleetId + "=" + pk));

      // Another durable receipt's address in the proof: offline verify fails naming the entry.
      ObjectNode swapped = (ObjectNode) proof.deepCopy();
      ((ObjectNode) ((ArrayNode) swapped.get("receipts")).get(0))
          .put("receipt", proof.get("receipts").get(1).get("receipt").textValue());
      DaemonProcess.Result bad =
          FleetLogTest.fleetVerify(
              write("swapped.json", CanonicalJson.canonicalString(swapped)).toString(),
              a1.toString(),
              fleetId + "=" + pk);
      assertEquals(1, bad.exit(), bad.out() + bad.err());
      assertTrue(bad.err().contains("fleet-proof.receipts[0]"), bad.err());
      // The durable total rewritten in the signed aggregate: its signature no longer holds.
      ObjectNode env = (ObjectNode) CanonicalJson.parse(agg.out());
      ((ObjectNode) env.get("core").get("durable")).put("tree_size", 1);
      DaemonProcess.Result forged =
          FleetLogTest.fleetVerify(
              p1.toString(),
              write("forged.json", CanonicalJson.canonicalString(env)).toString(),
              fleetId + "=" + pk);
      assertNotEquals(0, forged.exit(), forged.out() + forged.err());

      // A second detached run: the later aggregate's durable part extends the first's.
      String quick = detach(c, Wat2Wasm.parse(QUICK));
      waitDone(c, quick);
      DaemonProcess.Result agg2 = ctl("fleet", "aggregate", "--socket", s);
      FleetLogTest.ok(agg2);
      Path a2 = write("a2.json", agg2.out());
      assertEquals(
          3, CanonicalJson.parse(agg2.out()).get("core").get("durable").get("tree_size").asLong());
      DaemonProcess.Result cons =
          ctl("fleet", "consistency", a1.toString(), a2.toString(), "--socket", s);
      FleetLogTest.ok(cons);
      assertTrue(cons.out().contains("durable_proof"), cons.out());
      DaemonProcess.Result cv =
          ctl(
              "fleet",
              "verify",
              write("c.json", cons.out()).toString(),
              "--aggregate",
              a2.toString(),
              "--old",
              a1.toString(),
              "--signer",
              fleetId + "=" + pk);
      FleetLogTest.ok(cv);
      assertTrue(cv.out().contains("durable part (2)"), cv.out());
    }

    // Behind the node's back: the first durable receipt's energy raised in the store.
    List<List<String>> first =
        StoppedState.rows(
            state,
            "SELECT address, envelope FROM durable_records WHERE run_id = ?"
                + " AND envelope LIKE '%sandbox.receipt/1%' ORDER BY rowid LIMIT 1",
            durable);
    assertEquals(1, first.size());
    String address = first.get(0).get(0);
    ObjectNode env = (ObjectNode) CanonicalJson.parse(first.get(0).get(1));
    ObjectNode core = (ObjectNode) env.get("core");
    core.put("total_uj", core.get("total_uj").asLong() + 1_000_000);
    assertEquals(
        1,
        StoppedState.update(
            state,
            "UPDATE durable_records SET envelope = ? WHERE address = ?",
            CanonicalJson.canonicalString(env),
            address));
    Path sock2 = dir.resolve("run/sandboxd2.sock");
    try (DaemonProcess daemon = DaemonProcess.start(state, sock2, "--serve-damaged-store")) {
      DaemonProcess.Result fp =
          ctl(
              "fleet",
              "prove",
              durable,
              "--aggregate",
              a1.toString(),
              "--socket",
              sock2.toString());
      assertNotEquals(0, fp.exit(), fp.out());
      assertTrue(
          fp.err().contains("durable ledger position 0") && fp.err().contains("edited"), fp.err());
      DaemonProcess.Result agg = ctl("fleet", "aggregate", "--socket", sock2.toString());
      assertNotEquals(0, agg.exit(), agg.out());
      assertTrue(agg.err().contains("durable ledger position 0"), agg.err());
    }
  }
}
