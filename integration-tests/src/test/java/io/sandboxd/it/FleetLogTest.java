package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 14 items 1 and 2 through the real daemon and CLI: the node log's checkpoints and proofs
 * verify offline with the node's key and fail on a changed byte, an unknown key, another tree size;
 * the log survives a restart consistently; fleet aggregates prove a run and extend.
 */
class FleetLogTest {
  @TempDir Path dir;

  private DaemonProcess.Result ctl(String... args) throws Exception {
    return DaemonProcess.sandboxctl(null, args);
  }

  /** {@code sandboxctl fleet verify PROOF --aggregate AGGREGATE --signer SIGNER}, offline. */
  static DaemonProcess.Result fleetVerify(String proof, String aggregate, String signer)
      throws Exception {
    return DaemonProcess.sandboxctl(
        null, "fleet", "verify", proof, "--aggregate", aggregate, "--signer", signer);
  }

  private Path write(String name, String text) throws Exception {
    Path p = dir.resolve(name);
    Files.writeString(p, text, StandardCharsets.UTF_8);
    return p;
  }

  /** Asserts that a CLI call succeeded, showing what it printed when not. */
  static void ok(DaemonProcess.Result r) {
    assertEquals(0, r.exit(), r.out() + r.err());
  }

  /** {@code sandboxctl verify FILE --signer SIGNER} fails with {@code exit}, naming {@code why}. */
  private void assertVerifyFails(Path file, String signer, int exit, String why) throws Exception {
    DaemonProcess.Result r = ctl("verify", file.toString(), "--signer", signer);
    assertEquals(exit, r.exit(), r.out() + r.err());
    assertTrue(r.err().contains(why), r.err());
  }

  @Test
  void logAndFleetProofsVerifyOfflineAndRefuseWhatIsWrong() throws Exception {
    byte[] hello = Submissions.exampleUnit("hello");
    String grants = Submissions.exampleGrants("hello");
    Path state = dir.resolve("state");
    Path sock = dir.resolve("run/sandboxd.sock");
    String s = sock.toString();
    List<SubmitReply> runs = new ArrayList<>();
    String pk;
    long sizeBefore;
    Path cpFile;
    try (DaemonProcess daemon = DaemonProcess.start(state, sock);
        DaemonClient c = new DaemonClient(sock)) {
      for (int i = 0; i < 3; i++) {
        runs.add(Submissions.submit(c, hello, grants));
      }
      Envelope receipt = Envelope.fromJson(CanonicalJson.parse(runs.get(1).getReceipt()));
      pk = receipt.publicKey();

      // The checkpoint: a C2SP note naming the node, verified with its key only.
      DaemonProcess.Result cp = ctl("log", "checkpoint", "--socket", s);
      ok(cp);
      String[] lines = cp.out().split("\n");
      assertTrue(lines[0].startsWith("sandboxd/"), cp.out());
      sizeBefore = Long.parseLong(lines[1]);
      // The chained store record carries no signature of its own and is no leaf.
      assertTrue(sizeBefore >= 9, "3 runs x (segment, receipt, attestation)");
      assertTrue(lines[4].startsWith("\u2014 " + lines[0] + " "), cp.out());
      cpFile = write("cp.txt", cp.out());
      ok(ctl("verify", cpFile.toString(), "--signer", pk));
      // Issue 24: a key bound to its log's origin passes; bound to another log, the checkpoint
      // (of this node's log) is refused naming both.
      ok(ctl("verify", cpFile.toString(), "--signer", lines[0] + "=" + pk));
      DaemonProcess.Result otherLog =
          ctl("verify", cpFile.toString(), "--signer", "sandboxd/other-host=" + pk);
      assertEquals(1, otherLog.exit(), otherLog.out() + otherLog.err());
      assertTrue(
          otherLog.err().contains(lines[0]) && otherLog.err().contains("sandboxd/other-host"),
          otherLog.err());
      String otherKey = SigningKey.fromSeed(new byte[32]).publicKey().hex();
      assertVerifyFails(cpFile, otherKey, 1, "UNKNOWN_KEY");
      DaemonProcess.Result noKey = ctl("verify", cpFile.toString());
      assertEquals(2, noKey.exit());
      assertTrue(noKey.err().contains("--signer"), noKey.err());
      String grown =
          cp.out().replaceFirst("\n" + sizeBefore + "\n", "\n" + (sizeBefore + 1) + "\n");
      assertVerifyFails(write("forged.txt", grown), pk, 1, "BAD_SIGNATURE");
      String zeroPadded =
          cp.out().replaceFirst("\n" + sizeBefore + "\n", "\n0" + sizeBefore + "\n");
      assertVerifyFails(write("malformed.txt", zeroPadded), pk, 2, "leading zeros");

      // Inclusion of a receipt; a changed path byte or another tree size fails.
      DaemonProcess.Result prove = ctl("log", "prove", receipt.address(), "--socket", s);
      ok(prove);
      Path proofFile = write("proof.json", prove.out());
      DaemonProcess.Result v = ctl("verify", proofFile.toString(), "--signer", pk);
      ok(v);
      assertTrue(v.out().contains(receipt.address()), v.out());
      ObjectNode doc = (ObjectNode) CanonicalJson.parse(prove.out());
      ObjectNode bent = doc.deepCopy();
      String first = bent.get("proof").get("path").get(0).textValue();
      ((com.fasterxml.jackson.databind.node.ArrayNode) bent.get("proof").get("path"))
          .set(0, (first.charAt(0) == '0' ? "1" : "0") + first.substring(1));
      assertVerifyFails(
          write("bent.json", CanonicalJson.canonicalString(bent)), pk, 1, "ROOT_MISMATCH");
      ObjectNode resized = doc.deepCopy();
      ((ObjectNode) resized.get("proof")).put("tree_size", sizeBefore + 7);
      assertVerifyFails(
          write("resized.json", CanonicalJson.canonicalString(resized)), pk, 1, "TREE_SIZE");

      DaemonProcess.Result missing = ctl("log", "prove", "ab".repeat(32), "--socket", s);
      assertEquals(2, missing.exit());
      assertTrue(missing.err().contains("not in the node log"), missing.err());
      DaemonProcess.Result notHex = ctl("log", "prove", "XYZ", "--socket", s);
      assertEquals(2, notHex.exit());
      assertTrue(notHex.err().contains("64 lowercase hex"), notHex.err());
      DaemonProcess.Result backwards = ctl("log", "consistency", "5", "2", "--socket", s);
      assertEquals(2, backwards.exit());
      assertTrue(backwards.err().contains("SIZE1"), backwards.err());

      // Fleet aggregate: energy sums of the receipts, a run's proof, offline verification.
      DaemonProcess.Result agg = ctl("fleet", "aggregate", "--socket", s);
      ok(agg);
      Path a1 = write("a1.json", agg.out());
      JsonNode core = CanonicalJson.parse(agg.out()).get("core");
      assertEquals("sandbox.fleet/1", core.get("schema").textValue());
      assertEquals(3, core.get("tree_size").longValue());
      long total = 0;
      for (SubmitReply r : runs) {
        total +=
            Receipt.fromCore(Envelope.fromJson(CanonicalJson.parse(r.getReceipt())).core())
                .totalUj();
      }
      assertEquals(total, core.get("total_uj").longValue());
      assertEquals(lines[0], core.get("fleet_id").textValue());
      DaemonProcess.Result fp =
          ctl(
              "fleet",
              "prove",
              runs.get(1).getRunId(),
              "--aggregate",
              a1.toString(),
              "--socket",
              s);
      ok(fp);
      Path p1 = write("p1.json", fp.out());
      String fleetId = core.get("fleet_id").textValue();
      DaemonProcess.Result fv = fleetVerify(p1.toString(), a1.toString(), fleetId + "=" + pk);
      ok(fv);
      assertTrue(fv.out().contains(runs.get(1).getRunId()), fv.out());
      assertTrue(fv.out().contains("signer " + pk + " (--signer)"), fv.out());
      // Issue 24: a key trusted for no fleet id cannot say whose the aggregate is: refused.
      DaemonProcess.Result unbound = fleetVerify(p1.toString(), a1.toString(), pk);
      assertEquals(2, unbound.exit(), unbound.out() + unbound.err());
      assertTrue(unbound.err().contains(fleetId) && unbound.err().contains(pk), unbound.err());
      assertTrue(unbound.out().contains("signer " + pk), unbound.out());
      // The node's aggregate, unchanged, re-signed by another real key whose fleet is another: the
      // signature holds under that key, the fleet id is not its own.
      byte[] seed = new byte[32];
      java.util.Arrays.fill(seed, (byte) 7);
      SigningKey otherNode = SigningKey.fromSeed(seed);
      String otherPk = otherNode.publicKey().hex();
      Path swapped = write("swapped.json", Envelope.sign(core, otherNode).toJsonLine());
      DaemonProcess.Result swap =
          fleetVerify(p1.toString(), swapped.toString(), "sandboxd/other-host=" + otherPk);
      assertEquals(1, swap.exit(), swap.out() + swap.err());
      assertTrue(
          swap.err().contains("claims origin " + fleetId)
              && swap.err().contains(otherPk)
              && swap.err().contains("sandboxd/other-host"),
          swap.err());
      assertTrue(swap.out().contains("signer " + otherPk), swap.out());
      DaemonProcess.Result wrongSigner =
          fleetVerify(p1.toString(), a1.toString(), fleetId + "=" + otherKey);
      assertEquals(1, wrongSigner.exit(), wrongSigner.err());
      assertTrue(wrongSigner.out().contains("signer " + otherKey), wrongSigner.out());
      // Issue 24: the node's fleet id and root, totals rewritten, re-signed by an unknown key.
      ObjectNode forgedCore = (ObjectNode) core.deepCopy();
      forgedCore.put("total_uj", total + 1_000_000);
      Path resigned =
          write(
              "resigned.json",
              Envelope.sign(forgedCore, SigningKey.fromSeed(new byte[32])).toJsonLine());
      // Without a named key the check refuses, rather than trusting the key the input names.
      DaemonProcess.Result unnamed =
          ctl("fleet", "verify", p1.toString(), "--aggregate", resigned.toString());
      assertEquals(2, unnamed.exit(), unnamed.out() + unnamed.err());
      assertTrue(unnamed.err().contains("--signer"), unnamed.err());
      assertTrue(!unnamed.out().contains("valid"), unnamed.out());
      DaemonProcess.Result foreign =
          fleetVerify(p1.toString(), resigned.toString(), fleetId + "=" + pk);
      assertEquals(1, foreign.exit(), foreign.out() + foreign.err());
      assertTrue(foreign.out().contains("signer " + pk), foreign.out());
      String tamperedAgg = agg.out().replace("\"tree_size\":3", "\"tree_size\":4");
      DaemonProcess.Result tampered =
          fleetVerify(p1.toString(), write("t.json", tamperedAgg).toString(), fleetId + "=" + pk);
      assertEquals(1, tampered.exit(), tampered.err());
      DaemonProcess.Result noRun =
          ctl("fleet", "prove", "no-such-run", "--aggregate", a1.toString(), "--socket", s);
      assertEquals(2, noRun.exit());
      assertTrue(noRun.err().contains("not in aggregate"), noRun.err());
    }

    // After a restart the log continues: the old checkpoint is a prefix of the new one.
    try (DaemonProcess daemon = DaemonProcess.start(state, sock);
        DaemonClient c = new DaemonClient(sock)) {
      SubmitReply later = Submissions.submit(c, hello, grants);
      DaemonProcess.Result cp2 = ctl("log", "checkpoint", "--socket", s);
      ok(cp2);
      long sizeAfter = Long.parseLong(cp2.out().split("\n")[1]);
      assertTrue(sizeAfter >= sizeBefore + 4, sizeBefore + " -> " + sizeAfter);
      DaemonProcess.Result cons =
          ctl(
              "log",
              "consistency",
              Long.toString(sizeBefore),
              Long.toString(sizeAfter),
              "--socket",
              s);
      ok(cons);
      JsonNode consDoc = CanonicalJson.parse(cons.out());
      assertEquals(
          Files.readString(cpFile), consDoc.get("old").textValue(), "same tree head, same note");
      ok(ctl("verify", write("cons.json", cons.out()).toString(), "--signer", pk));
      ok(
          ctl(
              "verify",
              write(
                      "later.json",
                      ctl(
                              "log",
                              "prove",
                              Envelope.fromJson(CanonicalJson.parse(later.getAttestation()))
                                  .address(),
                              "--socket",
                              s)
                          .out())
                  .toString(),
              "--signer",
              pk));

      // A later aggregate from the same start extends the first: consistency proof offline.
      Path a1 = dir.resolve("a1.json");
      DaemonProcess.Result agg2 = ctl("fleet", "aggregate", "--socket", s);
      ok(agg2);
      Path a2 = write("a2.json", agg2.out());
      String fleetId2 = CanonicalJson.parse(agg2.out()).get("core").get("fleet_id").textValue();
      DaemonProcess.Result fc =
          ctl("fleet", "consistency", a1.toString(), a2.toString(), "--socket", s);
      ok(fc);
      Path cf = write("fc.json", fc.out());
      ok(
          ctl(
              "fleet",
              "verify",
              cf.toString(),
              "--aggregate",
              a2.toString(),
              "--old",
              a1.toString(),
              "--signer",
              fleetId2 + "=" + pk));
      DaemonProcess.Result swapped =
          ctl(
              "fleet",
              "verify",
              cf.toString(),
              "--aggregate",
              a1.toString(),
              "--old",
              a2.toString(),
              "--signer",
              fleetId2 + "=" + pk);
      assertEquals(1, swapped.exit(), swapped.err());
      DaemonProcess.Result stale =
          fleetVerify(dir.resolve("p1.json").toString(), a2.toString(), fleetId2 + "=" + pk);
      assertEquals(1, stale.exit(), stale.err());
      assertTrue(stale.err().contains("is for aggregate"), stale.err());
    }
  }
}
