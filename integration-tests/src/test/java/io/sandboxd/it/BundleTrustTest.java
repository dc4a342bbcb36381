package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ImportRunRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23 item 3 through three running daemons: node a exports parked runs sealed for a named
 * node; b trusts a's key and imports what is addressed to it; c trusts only b, so it refuses a's
 * bundle for b (the destination) and a's bundle for c (the signer's key, named); a bundle whose
 * entry was edited in transit, or whose seal was stripped, is refused; nothing is half-imported.
 */
class BundleTrustTest {
  @TempDir static Path dir;
  static DaemonProcess a;
  static DaemonProcess b;
  static DaemonProcess c;
  static byte[] module;

  @BeforeAll
  static void start() throws Exception {
    module = Wat2Wasm.parse(DurableRunTest.COUNTER);
    a = DaemonProcess.start(dir.resolve("a"), dir.resolve("a.sock"));
    String keyA = a.publicKey();
    b = DaemonProcess.start(dir.resolve("b"), dir.resolve("b.sock"), "--config", trusting(keyA));
    String keyB = b.publicKey();
    c = DaemonProcess.start(dir.resolve("c"), dir.resolve("c.sock"), "--config", trusting(keyB));
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(a, b, c);
  }

  static String trusting(String key) throws Exception {
    Path cfg = dir.resolve("trust-" + key.substring(0, 8) + ".json");
    Files.writeString(cfg, "{\"durable\":{\"trusted_nodes\":[\"" + key + "\"]}}");
    return cfg.toString();
  }

  /** A run parked on a and exported with the CLI for {@code destination}; the bundle's bytes. */
  static byte[] parkedBundleFor(String destination) throws Exception {
    String run = Submissions.detached(a.client(), module, DurableRunTest.GRANTS, "step");
    assertEquals("parked", Submissions.suspend(a.client(), run));
    Path file = dir.resolve(run + ".bundle");
    DaemonProcess.Result e =
        a.ctl("runs", "export", run, "--bundle", file.toString(), "--to", destination);
    assertEquals(0, e.exit(), e.err());
    return Files.readAllBytes(file);
  }

  static String runId(byte[] bundle) {
    return CanonicalJson.parse(bundle).get("run_id").asText();
  }

  static String refused(DaemonClient node, byte[] bundle) {
    return Bundles.refusedImport(node, bundle, runId(bundle)).getStatus().getDescription();
  }

  @Test
  void aBundleForBIsRefusedByCAndWhenEditedOrUnsealedByBAndImportedIntactByB() throws Exception {
    byte[] forB = parkedBundleFor(b.publicKey());
    String keyC = c.publicKey();
    String other = refused(c.client(), forB);
    assertTrue(
        other.contains("destination: the bundle is for node key " + b.publicKey())
            && other.contains("this node is " + c.publicKey()),
        other);

    String edited = refused(b.client(), Bundles.edit(forB, o -> o.put("entry", "other_export")));
    assertTrue(edited.contains("entry: differs from what the exporting node sealed"), edited);
    String unsealed = refused(b.client(), Bundles.edit(forB, o -> o.remove("seal")));
    assertTrue(unsealed.contains("seal: missing"), unsealed);
    String readdressed =
        refused(
            b.client(),
            Bundles.edit(
                forB, o -> ((ObjectNode) o.get("seal").get("core")).put("destination", keyC)));
    assertTrue(readdressed.contains("seal: "), readdressed);

    assertEquals(
        "parked",
        b.client()
            .stub()
            .importRun(ImportRunRequest.newBuilder().setBundle(ByteString.copyFrom(forB)).build())
            .getState());
  }

  @Test
  void aNodeRefusesABundleFromAKeyItsConfigDoesNotTrustNamingTheKey() throws Exception {
    byte[] forC = parkedBundleFor(c.publicKey());
    String why = refused(c.client(), forC);
    assertTrue(
        why.contains("signer: node key " + a.publicKey()) && why.contains("durable.trusted_nodes"),
        why);
  }
}
