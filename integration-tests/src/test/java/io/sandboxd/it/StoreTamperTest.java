package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.KeyFile;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 8 items 4, 9, 10 and 14 against the running daemon: a run store changed behind its back (a
 * rewritten outcome or log, a changed receipt, a deleted run) is refused at start naming the run
 * and column, and with --serve-damaged-store is listed as tampered, never with its values;
 * `sandboxctl verify` fails a broken chain whatever else is in its input and names its signer; key
 * and state directories other users can write, a key file another user owns, and a planted
 * lock-file link are refused.
 */
class StoreTamperTest {
  @TempDir static Path dir;

  /** A stopped daemon's state: two Completed hello runs and one Terminated spin run. */
  static Path pristine;

  static SubmitReply hello1;
  static SubmitReply hello2;
  static SubmitReply spin;

  @BeforeAll
  static void recordRuns() throws Exception {
    pristine = dir.resolve("pristine");
    List<SubmitReply> runs =
        StoppedState.record(pristine, dir.resolve("p/sandboxd.sock"), "hello", "spin", "hello");
    hello1 = runs.get(0);
    spin = runs.get(1);
    hello2 = runs.get(2);
    assertEquals("\"Completed\"", hello1.getOutcomeJson());
    assertEquals("{\"Terminated\":{\"breach\":\"CpuTime\"}}", spin.getOutcomeJson());
  }

  /** A copy of the pristine state (key, host id, store), to tamper with. */
  static Path copyOfPristine(String name) throws Exception {
    return StoppedState.copy(pristine, dir.resolve(name));
  }

  /** A copy of the pristine state with {@code statements} run on its store. */
  static Path tampered(String name, String... statements) throws Exception {
    return StoppedState.tamperedCopy(pristine, dir.resolve(name), statements);
  }

  /**
   * Starting a daemon on {@code state} is refused naming {@code run} and then {@code column} (""
   * for whichever the check reached first); what it said.
   */
  static String refusedNaming(Path state, SubmitReply run, String column) {
    String said = DaemonProcess.refusedStart(state);
    assertTrue(said.contains("run " + run.getRunId() + ", " + column), said);
    return said;
  }

  @Test
  void theUntouchedStoreVerifiesEveryRecordKindAtStart() throws Exception {
    Path state = copyOfPristine("untouched");
    try (DaemonProcess d = DaemonProcess.start(state, dir.resolve("untouched.sock"))) {
      String list = StoppedState.verifiedRunsList(d, 3);
      assertTrue(list.contains(spin.getRunId()), list);
      assertFalse(list.contains("Tampered"), list);
    }
  }

  @Test
  void anOutcomeRewrittenToCompletedIsRefusedNamingTheRunAndColumn() throws Exception {
    Path state =
        tampered(
            "outcome",
            "UPDATE runs SET outcome = '\"Completed\"' WHERE run_id = '" + spin.getRunId() + "'");
    String said = refusedNaming(state, spin, "outcome:");
    assertTrue(said.contains("refusing to serve it"), said);

    // Told to serve it anyway: listed as Tampered, never as Completed.
    try (DaemonProcess d =
        DaemonProcess.start(state, dir.resolve("outcome2.sock"), "--serve-damaged-store")) {
      DaemonProcess.Result list = d.ctl("runs", "list");
      assertEquals(0, list.exit(), list.err());
      String line =
          list.out().lines().filter(l -> l.startsWith(spin.getRunId())).findFirst().orElseThrow();
      assertTrue(line.contains("{\"Tampered\":"), line);
      assertFalse(line.contains("\"Completed\""), line);
      DaemonProcess.Result show = d.ctl("runs", "show", spin.getRunId());
      assertEquals(1, show.exit(), show.out());
      assertTrue(show.err().contains("TAMPERED"), show.err());
      assertFalse(show.out().contains("\"Completed\""), show.out());
      // The runs that were not touched still show what they signed.
      DaemonProcess.Result good = d.ctl("runs", "show", hello1.getRunId());
      assertEquals(0, good.exit(), good.err());
      assertTrue(good.out().contains("outcome    \"Completed\""), good.out());
    }
  }

  @Test
  void aRewrittenLogIsRefused() throws Exception {
    refusedNaming(
        tampered(
            "log",
            "UPDATE runs SET log = 'nothing to see here' WHERE run_id = '"
                + hello2.getRunId()
                + "'"),
        hello2,
        "log:");
  }

  @Test
  void aChangedOrSwappedReceiptEnvelopeIsRefused() throws Exception {
    Path changed =
        tampered(
            "receipt",
            "UPDATE run_records SET envelope = record_bytes(replace(record_text(envelope),"
                + " '\"tier\":\"S2\"', '\"tier\":\"S3\"'))"
                + " WHERE kind = 'receipt' AND run_id = '"
                + hello1.getRunId()
                + "'");
    refusedNaming(changed, hello1, "");

    // A validly signed receipt of another run put in its place.
    Path swapped =
        tampered(
            "swapped",
            "UPDATE run_records SET (envelope, address) = (SELECT envelope, address FROM run_records WHERE"
                + " kind = 'receipt' AND run_id = '"
                + hello2.getRunId()
                + "') WHERE kind = 'receipt'"
                + " AND run_id = '"
                + hello1.getRunId()
                + "'");
    refusedNaming(swapped, hello1, "");
  }

  @Test
  void aDeletedRunIsDetected() throws Exception {
    for (String how : List.of("row", "everything", "last")) {
      String id = how.equals("last") ? hello2.getRunId() : spin.getRunId();
      List<String> statements = new ArrayList<>();
      statements.add("DELETE FROM runs WHERE run_id = '" + id + "'");
      if (!how.equals("row")) {
        statements.add("DELETE FROM run_records WHERE run_id = '" + id + "'");
        statements.add("DELETE FROM ledger WHERE run_id = '" + id + "'");
      }
      String said =
          DaemonProcess.refusedStart(tampered("deleted-" + how, statements.toArray(new String[0])));
      assertTrue(
          said.contains("was deleted") || said.contains("a run was deleted"), how + ": " + said);
    }
  }

  /** The node's own key (the test runs as the daemon's user): chains it could sign. */
  static SigningKey nodeKey() throws Exception {
    return KeyFile.read(pristine.resolve("keys/node.ed25519"));
  }

  static Envelope env(String line) {
    return Envelope.fromJson(CanonicalJson.parse(line));
  }

  static Envelope segment(SigningKey key, Envelope receipt, long seq, String prev) {
    RunSegment seg =
        new RunSegment(
            hello1.getRunId(),
            seq,
            RunSegment.Kind.execute,
            prev,
            "host",
            key.publicKey().hex(),
            "S2",
            RunSegment.fromCore(env(hello1.getSegment()).core()).grantsId(),
            receipt.address(),
            null,
            0,
            Provenance.Estimator,
            1_000 + seq);
    return Envelope.sign(seg.toCore(), key);
  }

  static DaemonProcess.Result verify(List<Envelope> input, String... extra) throws Exception {
    Path f = Files.createTempFile(dir, "verify", ".jsonl");
    Files.writeString(
        f, String.join("\n", input.stream().map(Envelope::toJsonLine).toList()) + "\n");
    List<String> args = new ArrayList<>(List.of("verify", f.toString()));
    args.addAll(List.of(extra));
    return DaemonProcess.sandboxctl(null, args.toArray(new String[0]));
  }

  @Test
  void verifyFailsABrokenChainWhateverElseIsInTheInputAndNamesItsSigner() throws Exception {
    SigningKey key = nodeKey();
    String hex = key.publicKey().hex();
    Envelope seg0 = env(hello1.getSegment());
    Envelope receipt = env(hello1.getReceipt());
    Envelope attestation = env(hello1.getAttestation());
    assertEquals(hex, seg0.publicKey());
    Envelope seg1 = segment(key, receipt, 1, seg0.address());
    Envelope seg2 = segment(key, receipt, 2, seg1.address());
    Envelope spliced2 = segment(key, receipt, 2, Blake3.hex(new byte[] {7}));

    List<List<Envelope>> broken =
        List.of(
            List.of(seg0, seg1, spliced2, receipt), // spliced + a receipt
            List.of(receipt, seg0, seg2), // seq gap + a receipt
            List.of(attestation, seg2, seg0, seg1, receipt, spliced2),
            List.of(seg0, env(hello2.getReceipt()))); // a receipt of another run
    for (List<Envelope> input : broken) {
      DaemonProcess.Result r = verify(input, "--signer", hex);
      assertEquals(1, r.exit(), r.out() + r.err());
      assertTrue(r.err().startsWith("invalid at "), r.err());
      assertTrue(r.out().contains("signer " + hex), r.out());
      // Issue 24: without a named key there is no verdict at all, broken or not.
      DaemonProcess.Result unnamed = verify(input);
      assertEquals(2, unnamed.exit(), unnamed.out() + unnamed.err());
      assertTrue(unnamed.err().contains("--signer"), unnamed.err());
    }
    // The real run's evidence, in any order: valid under the node's key, which is printed.
    DaemonProcess.Result ok = verify(List.of(attestation, receipt, seg0), "--signer", hex);
    assertEquals(0, ok.exit(), ok.err());
    assertTrue(ok.out().contains("chain of 1 segment(s), run " + hello1.getRunId()), ok.out());
    DaemonProcess.Result pinned = verify(List.of(attestation, receipt, seg0), "--signer", hex);
    assertEquals(0, pinned.exit(), pinned.err());
    assertTrue(pinned.out().contains("signer " + hex + " (--signer)"), pinned.out());
  }

  static UserPrincipal nobody() throws Exception {
    return dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
  }

  @Test
  void keyAndStateDirectoriesOthersCanWriteAndForeignKeysAreRefused() throws Exception {
    Path open = copyOfPristine("keys-0777");
    Files.setPosixFilePermissions(
        open.resolve("keys"), PosixFilePermissions.fromString("rwxrwxrwx"));
    String said = DaemonProcess.refusedStart(open);
    assertTrue(said.contains("key directory") && said.contains("0777"), said);

    Path foreign = copyOfPristine("key-nobody");
    Files.setOwner(foreign.resolve("keys/node.ed25519"), nobody());
    String said2 = DaemonProcess.refusedStart(foreign);
    assertTrue(said2.contains("owned by uid 65534"), said2);

    Path stateOpen = copyOfPristine("state-0777");
    Files.setPosixFilePermissions(stateOpen, PosixFilePermissions.fromString("rwxrwxrwx"));
    assertTrue(DaemonProcess.refusedStart(stateOpen).contains("state directory"));

    Path stateForeign = copyOfPristine("state-nobody");
    Files.setOwner(stateForeign, nobody());
    assertTrue(DaemonProcess.refusedStart(stateForeign).contains("owned by uid 65534"));

    Path keysForeign = copyOfPristine("keys-nobody");
    Files.setOwner(keysForeign.resolve("keys"), nobody());
    assertTrue(DaemonProcess.refusedStart(keysForeign).contains("owned by uid 65534"));

    // Put right, the same state starts with the same key.
    Files.setPosixFilePermissions(
        open.resolve("keys"), PosixFilePermissions.fromString("rwx------"));
    try (DaemonProcess d = DaemonProcess.start(open, dir.resolve("keys-fixed.sock"))) {
      assertTrue(d.log().contains("key " + nodeKey().publicKey().hex()), d.log());
    }
  }

  @Test
  void aPlantedLockFileLinkIsNotFollowed() throws Exception {
    Path sockDir = Files.createDirectories(dir.resolve("lockdir"));
    Path socket = sockDir.resolve("sandboxd.sock");
    Path target = dir.resolve("created-through-the-link");
    Files.createSymbolicLink(sockDir.resolve("sandboxd.sock.lock"), target);
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> DaemonProcess.start(dir.resolve("lockstate"), socket));
    assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
    assertFalse(Files.exists(target, LinkOption.NOFOLLOW_LINKS), "the link's target was created");

    // A lock file another user planted there is refused too.
    Files.delete(sockDir.resolve("sandboxd.sock.lock"));
    Path planted = Files.createFile(sockDir.resolve("sandboxd.sock.lock"));
    Files.setOwner(planted, nobody());
    IllegalStateException e2 =
        assertThrows(
            IllegalStateException.class,
            () -> DaemonProcess.start(dir.resolve("lockstate"), socket));
    assertTrue(e2.getMessage().contains("owned by uid 65534"), e2.getMessage());

    // Removed, the daemon starts and makes its own lock file.
    Files.delete(planted);
    try (DaemonProcess d = DaemonProcess.start(dir.resolve("lockstate"), socket)) {
      assertTrue(
          Files.isRegularFile(sockDir.resolve("sandboxd.sock.lock"), LinkOption.NOFOLLOW_LINKS));
    }
    assertFalse(Files.exists(target, LinkOption.NOFOLLOW_LINKS));
  }
}
