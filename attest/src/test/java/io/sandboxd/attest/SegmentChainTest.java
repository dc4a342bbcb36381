package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.RunSegment.Kind;
import io.sandboxd.attest.RunSegment.SnapshotRef;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Durable run records as one signed hash chain (WIRE.md §2.6, conformance check 20). */
class SegmentChainTest {
  private static final SigningKey A = EnvelopeTest.seeded(11);
  private static final SigningKey B = EnvelopeTest.seeded(12);
  private static final String GRANTS =
      "9eb3c67383235c3769a0821dd660df26e48e96934ab5c224cb2391f0f7796406";
  private static final String FS = "1".repeat(64);
  private static final String MANIFEST = "2".repeat(64);
  private static final String JOURNAL = "3".repeat(64);
  private static final SnapshotRef SNAP =
      new SnapshotRef(FS, null, MANIFEST, GRANTS, List.of("storage:inbox/**"), JOURNAL);

  private static void noEdit(ObjectNode core) {}

  /** Appends signed segments, each linked to the previous core's address. */
  private static final class Chain {
    final List<Envelope> envs = new ArrayList<>();
    final String runId;

    Chain(String runId) {
      this.runId = runId;
    }

    Chain() {
      this("run-1");
    }

    Chain add(Kind kind) {
      return add(kind, A, SegmentChainTest::noEdit);
    }

    Chain add(Kind kind, SigningKey key) {
      return add(kind, key, SegmentChainTest::noEdit);
    }

    Chain add(Kind kind, Consumer<ObjectNode> edit) {
      return add(kind, A, edit);
    }

    Chain add(Kind kind, SigningKey key, Consumer<ObjectNode> edit) {
      envs.add(Envelope.sign(core(kind, key, edit), key));
      return this;
    }

    ObjectNode core(Kind kind, SigningKey key, Consumer<ObjectNode> edit) {
      long seq = envs.size();
      String prev = envs.isEmpty() ? null : envs.get(envs.size() - 1).address();
      RunSegment s =
          new RunSegment(
              runId,
              seq,
              kind,
              prev,
              "node-" + key.publicKey().hex().substring(0, 4),
              key.publicKey().hex(),
              "S2",
              GRANTS,
              kind == Kind.execute
                  ? Blake3.hex(("receipt " + seq).getBytes(StandardCharsets.UTF_8))
                  : null,
              kind == Kind.execute ? null : SNAP,
              kind == Kind.resume ? 7_000_000 : 0,
              Provenance.ModelBased,
              1_700_000_000_000L + seq * 1000);
      ObjectNode core = s.toCore();
      edit.accept(core);
      return core;
    }

    List<Envelope> list() {
      return new ArrayList<>(envs);
    }
  }

  private static List<Envelope> fiveSegments() {
    return new Chain()
        .add(Kind.execute)
        .add(Kind.execute)
        .add(Kind.suspend)
        .add(Kind.resume)
        .add(Kind.execute)
        .list();
  }

  /** {@code executes} plain executes, then one whose core {@code edit} changes before signing. */
  private static Chain executesThen(int executes, Consumer<ObjectNode> edit) {
    Chain ch = new Chain();
    for (int i = 0; i < executes; i++) {
      ch.add(Kind.execute);
    }
    return ch.add(Kind.execute, edit);
  }

  /** A copy of {@code chain} with segment {@code k} replaced by {@code forged}. */
  private static List<Envelope> withSegment(List<Envelope> chain, int k, Envelope forged) {
    List<Envelope> out = new ArrayList<>(chain);
    out.set(k, forged);
    return out;
  }

  private static SegmentChain.Verdict.Invalid invalid(SegmentChain.Verdict v) {
    return assertInstanceOf(SegmentChain.Verdict.Invalid.class, v, v.toString());
  }

  private static void assertInvalidAt(
      long seq, String reasonPart, List<Envelope> chain, Optional<PublicKey> signer) {
    SegmentChain.Verdict.Invalid inv = invalid(SegmentChain.verify(chain, signer));
    assertEquals(seq, inv.seq(), inv.reason());
    assertTrue(inv.reason().contains(reasonPart), "reason: " + inv.reason());
  }

  private static void assertInvalidAt(long seq, String reasonPart, List<Envelope> chain) {
    assertInvalidAt(seq, reasonPart, chain, Optional.of(A.publicKey()));
  }

  // ================================================================ valid chains

  @Test
  void aSingleExecuteIsAValidChain() {
    List<Envelope> c = new Chain().add(Kind.execute).list();
    SegmentChain.Verdict v = SegmentChain.verify(c, Optional.of(A.publicKey()));
    assertEquals(new SegmentChain.Verdict.Valid(1, "run-1", c.get(0).address()), v);
  }

  @Test
  void executeSuspendResumeExecuteIsValid() {
    List<Envelope> c =
        new Chain().add(Kind.execute).add(Kind.suspend).add(Kind.resume).add(Kind.execute).list();
    SegmentChain.Verdict v = SegmentChain.verify(c, Optional.of(A.publicKey()));
    assertEquals(new SegmentChain.Verdict.Valid(4, "run-1", c.get(3).address()), v);
    assertEquals(v, SegmentChain.verify(c, Optional.empty()));
    // The links really are the previous core's address.
    for (int i = 1; i < c.size(); i++) {
      assertEquals(c.get(i - 1).address(), c.get(i).core().get("prev").textValue());
    }
  }

  @Test
  void theFiveSegmentChainIsValid() {
    List<Envelope> c = fiveSegments();
    SegmentChain.Verdict.Valid v =
        assertInstanceOf(
            SegmentChain.Verdict.Valid.class, SegmentChain.verify(c, Optional.of(A.publicKey())));
    assertEquals(5, v.length());
    assertEquals(c.get(4).address(), v.head());
  }

  @Test
  void chainsSurviveTheWire() {
    List<Envelope> c = fiveSegments();
    List<Envelope> reread = new ArrayList<>();
    for (Envelope e : c) {
      reread.add(Envelope.fromJson(CanonicalJson.parse(e.toJsonLine())));
    }
    assertEquals(
        SegmentChain.verify(c, Optional.of(A.publicKey())),
        SegmentChain.verify(reread, Optional.of(A.publicKey())));
    assertInstanceOf(
        SegmentChain.Verdict.Valid.class, SegmentChain.verify(reread, Optional.empty()));
  }

  @Test
  void aResumeOnAnotherHostIsValidWhenNoSingleSignerIsRequired() {
    List<Envelope> c =
        new Chain()
            .add(Kind.execute, A)
            .add(Kind.suspend, A)
            .add(Kind.resume, B)
            .add(Kind.execute, B)
            .list();
    assertInstanceOf(SegmentChain.Verdict.Valid.class, SegmentChain.verify(c, Optional.empty()));
    // Requiring host A's key pins every segment to A, so the resume on B is reported.
    assertInvalidAt(2, "expected signer " + A.publicKey().hex(), c, Optional.of(A.publicKey()));
  }

  // ================================================================ check 20: one byte of segment
  // k

  /** Another byte of the same character class, so the text stays JSON more often. */
  private static byte sibling(byte b) {
    if (b >= '0' && b <= '9') {
      return (byte) (b == '9' ? '0' : b + 1);
    }
    if (b >= 'a' && b <= 'z') {
      return (byte) (b == 'z' ? 'a' : b + 1);
    }
    if (b >= 'A' && b <= 'Z') {
      return (byte) (b == 'Z' ? 'A' : b + 1);
    }
    return (byte) (b ^ 0x01);
  }

  @Test
  void alteringAnyByteOfSegmentKFailsAtK() {
    List<Envelope> chain = fiveSegments();
    for (int k = 0; k < chain.size(); k++) {
      Envelope victim = chain.get(k);
      byte[] bytes = CanonicalJson.canonicalize(victim.core());
      int tried = 0;
      for (int pos = 0; pos < bytes.length; pos++) {
        byte[] m = bytes.clone();
        m[pos] = sibling(m[pos]);
        JsonNode altered;
        try {
          altered = CanonicalJson.parse(m);
        } catch (CanonicalJsonException e) {
          continue; // no longer JSON: it could not be loaded at all
        }
        tried++;
        List<Envelope> forged =
            withSegment(
                chain,
                k,
                new Envelope(altered, victim.address(), victim.signature(), victim.publicKey()));
        SegmentChain.Verdict.Invalid inv =
            invalid(SegmentChain.verify(forged, Optional.of(A.publicKey())));
        assertEquals(k, inv.seq(), "segment " + k + " byte " + pos + ": " + inv.reason());
        if (pos % 16 == 0) {
          // Also without a required signer: the address no longer matches the bytes.
          assertEquals(k, invalid(SegmentChain.verify(forged, Optional.empty())).seq());
        }
      }
      // Most bytes are letters and digits, so most alterations stay JSON and are checked.
      assertTrue(tried > bytes.length / 2, "segment " + k + ": only " + tried + " alterations");
    }
  }

  @Test
  void alteringSegmentKOnTheWireFailsAtK() {
    Seeded.repeat(
        300,
        g -> {
          int k = g.intBetween(0, 4);
          int position = g.intBetween(0, 100_000);
          int xor = g.intBetween(1, 255);
          List<Envelope> chain = fiveSegments();
          Optional<Envelope> forged = TamperedLine.of(chain.get(k), position, xor);
          if (forged.isEmpty()) {
            return; // refused on ingest
          }
          List<Envelope> altered = withSegment(chain, k, forged.get());
          assertEquals(k, invalid(SegmentChain.verify(altered, Optional.empty())).seq());
        });
  }

  /**
   * Each segment k of {@link #fiveSegments}, alone replaced by its {@code forge}d copy, fails at k.
   */
  private static void assertEachForgedSegmentFailsAtK(
      UnaryOperator<Envelope> forge, String reasonPart) {
    List<Envelope> chain = fiveSegments();
    for (int k = 0; k < chain.size(); k++) {
      assertInvalidAt(k, reasonPart, withSegment(chain, k, forge.apply(chain.get(k))));
    }
  }

  /**
   * {@code hex} with digit {@code i} set to {@code digit}, or to {@code other} if it was already.
   */
  private static String changed(String hex, int i, char digit, char other) {
    char[] c = hex.toCharArray();
    c[i] = c[i] == digit ? other : digit;
    return new String(c);
  }

  @Test
  void alteringTheAddressOfSegmentKFailsAtK() {
    assertEachForgedSegmentFailsAtK(
        e ->
            new Envelope(
                e.core(), changed(e.address(), 10, 'f', 'e'), e.signature(), e.publicKey()),
        "address mismatch");
  }

  @Test
  void alteringTheSignatureOfSegmentKFailsAtK() {
    assertEachForgedSegmentFailsAtK(
        e ->
            new Envelope(e.core(), e.address(), changed(e.signature(), 0, '0', '1'), e.publicKey()),
        "signature does not verify");
  }

  @Test
  void aReSignedAlterationBreaksTheNextLink() {
    // Someone holding the key rewrites segment k and signs it again: k verifies on its own, but
    // segment k+1 still points at the original address.
    List<Envelope> chain = fiveSegments();
    String originalHead = chain.get(4).address();
    for (int k = 0; k < chain.size(); k++) {
      ObjectNode core = (ObjectNode) chain.get(k).core().deepCopy();
      core.put("at_ms", core.get("at_ms").longValue() + 1);
      List<Envelope> forged = withSegment(chain, k, Envelope.sign(core, A));
      SegmentChain.Verdict v = SegmentChain.verify(forged, Optional.of(A.publicKey()));
      if (k < chain.size() - 1) {
        SegmentChain.Verdict.Invalid inv = invalid(v);
        assertEquals(k + 1, inv.seq(), inv.reason());
        assertTrue(inv.reason().startsWith("prev is " + chain.get(k).address()), inv.reason());
      } else {
        // The last segment has no successor: the chain verifies but its head changes.
        SegmentChain.Verdict.Valid valid = assertInstanceOf(SegmentChain.Verdict.Valid.class, v);
        assertNotEquals(originalHead, valid.head());
      }
    }
  }

  // ================================================================ order, seq and prev

  @Test
  void reorderedSegmentsFailAtTheFirstOutOfPlaceSeq() {
    List<Envelope> c = fiveSegments();
    List<Envelope> swapped = new ArrayList<>(c);
    Collections.swap(swapped, 1, 2);
    assertInvalidAt(1, "seq is 2, expected 1", swapped);

    List<Envelope> reversed = new ArrayList<>(c);
    Collections.reverse(reversed);
    assertInvalidAt(0, "seq is 4, expected 0", reversed);

    List<Envelope> tailFirst = new ArrayList<>(c);
    Collections.swap(tailFirst, 3, 4);
    assertInvalidAt(3, "seq is 4, expected 3", tailFirst);
  }

  @Test
  void aDroppedSegmentIsAGapInSeq() {
    List<Envelope> c = fiveSegments();
    List<Envelope> gap = new ArrayList<>(c);
    gap.remove(2);
    assertInvalidAt(2, "seq is 3, expected 2", gap);
  }

  @Test
  void aSeqThatSkipsAheadFailsEvenWhenPrevIsRight() {
    List<Envelope> c = executesThen(2, core -> core.put("seq", 3)).list();
    assertInvalidAt(2, "seq is 3, expected 2", c);
  }

  @Test
  void aRepeatedSeqFailsAsAFork() {
    List<Envelope> c = executesThen(2, core -> core.put("seq", 1)).list();
    // Two different properly signed segments at seq 1: a fork, named at its seq.
    assertInvalidAt(1, "fork: two different segments at seq 1", c);
  }

  @Test
  void aWrongPrevFailsAtThatSegment() {
    String bogus = "e".repeat(64);
    List<Envelope> c = executesThen(2, core -> core.put("prev", bogus)).add(Kind.execute).list();
    SegmentChain.Verdict.Invalid inv = invalid(SegmentChain.verify(c, Optional.of(A.publicKey())));
    assertEquals(2, inv.seq());
    assertEquals("prev is " + bogus + ", expected " + c.get(1).address(), inv.reason());
  }

  @Test
  void aPrevThatSkipsALinkFails() {
    Chain ch = new Chain().add(Kind.execute).add(Kind.execute);
    String first = ch.envs.get(0).address();
    List<Envelope> c = ch.add(Kind.execute, core -> core.put("prev", first)).list();
    assertInvalidAt(2, "prev is " + first, c);
  }

  @Test
  void aNullPrevAfterSeqZeroFails() {
    List<Envelope> c = executesThen(1, core -> core.putNull("prev")).list();
    assertInvalidAt(1, "prev is null", c);
  }

  @Test
  void aNonNullPrevAtSeqZeroFails() {
    List<Envelope> c =
        new Chain().add(Kind.execute, core -> core.put("prev", "0".repeat(64))).list();
    assertInvalidAt(0, "prev must be null at seq 0", c);
  }

  @Test
  void anEmptyChainIsInvalid() {
    assertInvalidAt(0, "empty", List.of());
  }

  // ================================================================ kinds

  @Test
  void aRunMustStartWithExecute() {
    assertInvalidAt(
        0, "starts with an execute segment, not suspend", new Chain().add(Kind.suspend).list());
    assertInvalidAt(
        0, "starts with an execute segment, not resume", new Chain().add(Kind.resume).list());
  }

  @ParameterizedTest
  @CsvSource({
    "suspend, execute",
    "suspend, suspend",
    "execute, resume",
    "resume, suspend",
    "resume, resume"
  })
  void illegalKindOrdersFailAtTheOffendingSegment(Kind before, Kind after) {
    Chain ch = new Chain().add(Kind.execute);
    if (before == Kind.suspend || before == Kind.resume) {
      ch.add(Kind.suspend);
    }
    if (before == Kind.resume) {
      ch.add(Kind.resume);
    }
    int at = ch.envs.size();
    List<Envelope> c = ch.add(after).add(Kind.execute).list();
    assertInvalidAt(at, after + " may not follow " + before, c);
  }

  @Test
  void anExecuteWithoutAReceiptFails() {
    List<Envelope> c = executesThen(1, core -> core.putNull("receipt")).list();
    assertInvalidAt(1, "must name its receipt", c);
  }

  @ParameterizedTest
  @ValueSource(strings = {"suspend", "resume"})
  void aSuspendOrResumeWithoutASnapshotFails(String kind) {
    Chain ch = new Chain().add(Kind.execute);
    if (kind.equals("resume")) {
      ch.add(Kind.suspend);
    }
    int at = ch.envs.size();
    List<Envelope> c = ch.add(Kind.valueOf(kind), core -> core.putNull("snapshot")).list();
    SegmentChain.Verdict.Invalid inv = invalid(SegmentChain.verify(c, Optional.of(A.publicKey())));
    assertEquals(at, inv.seq());
    assertTrue(
        inv.reason().contains("snapshot"), "reason names the missing snapshot: " + inv.reason());
  }

  // ================================================================ snapshots

  private static List<Envelope> resumeWith(Consumer<ObjectNode> snapshotEdit) {
    return new Chain()
        .add(Kind.execute)
        .add(Kind.suspend)
        .add(Kind.resume, core -> snapshotEdit.accept((ObjectNode) core.get("snapshot")))
        .add(Kind.execute)
        .list();
  }

  @Test
  void aResumeWithADifferentSnapshotFails() {
    List<Consumer<ObjectNode>> edits =
        List.of(
            s -> s.put("fs", "4".repeat(64)),
            s -> s.put("memory", "5".repeat(64)),
            s -> s.put("manifest", "6".repeat(64)),
            s -> s.put("grants_id", "7".repeat(64)),
            s -> s.put("journal_root", "8".repeat(64)),
            s -> ((ArrayNode) s.get("taint")).removeAll(),
            s -> ((ArrayNode) s.get("taint")).add("storage:secret/**"));
    for (Consumer<ObjectNode> edit : edits) {
      assertInvalidAt(2, "resume snapshot differs", resumeWith(edit));
    }
    // Unchanged, it is accepted: the failures above are about the snapshot alone.
    assertInstanceOf(
        SegmentChain.Verdict.Valid.class,
        SegmentChain.verify(resumeWith(s -> {}), Optional.of(A.publicKey())));
  }

  private static Consumer<ObjectNode> taint(String... labels) {
    return core -> {
      ArrayNode t = ((ObjectNode) core.get("snapshot")).putArray("taint");
      for (String l : labels) {
        t.add(l);
      }
    };
  }

  @Test
  void aResumeMustRepeatTheSnapshotByteForByte() {
    // Same labels in another order plus a duplicate: equal as a set, not the same bytes (§2.6).
    List<Envelope> c =
        new Chain()
            .add(Kind.execute)
            .add(Kind.suspend, taint("kv:00", "storage:inbox/**"))
            .add(Kind.resume, taint("storage:inbox/**", "kv:00", "kv:00"))
            .list();
    assertNotEquals(
        CanonicalJson.canonicalString(c.get(1).core().get("snapshot")),
        CanonicalJson.canonicalString(c.get(2).core().get("snapshot")));
    assertInvalidAt(2, "resume snapshot differs", c);
    // The identical spelling is accepted.
    List<Envelope> same =
        new Chain()
            .add(Kind.execute)
            .add(Kind.suspend, taint("kv:00", "storage:inbox/**"))
            .add(Kind.resume, taint("kv:00", "storage:inbox/**"))
            .list();
    assertInstanceOf(
        SegmentChain.Verdict.Valid.class, SegmentChain.verify(same, Optional.of(A.publicKey())));
  }

  // ================================================================ run ids and signers

  @Test
  void mixedRunIdsFail() {
    List<Envelope> c = executesThen(2, core -> core.put("run_id", "run-2")).list();
    assertInvalidAt(2, "run_id run-2 differs from run-1", c);
  }

  @Test
  void splicingTwoRunsFails() {
    List<Envelope> one = new Chain("run-1").add(Kind.execute).add(Kind.execute).list();
    List<Envelope> two = new Chain("run-2").add(Kind.execute).add(Kind.execute).list();
    List<Envelope> spliced = List.of(one.get(0), two.get(1));
    SegmentChain.Verdict.Invalid inv = invalid(SegmentChain.verify(spliced, Optional.empty()));
    assertEquals(1, inv.seq());
    assertTrue(inv.reason().contains("run_id"), inv.reason());
  }

  @Test
  void aWrongExpectedSignerFailsAtTheFirstSegment() {
    assertInvalidAt(
        0, "expected signer " + B.publicKey().hex(), fiveSegments(), Optional.of(B.publicKey()));
  }

  @Test
  void oneSegmentByAnotherKeyFailsAtThatSegment() {
    List<Envelope> c =
        new Chain()
            .add(Kind.execute)
            .add(Kind.execute)
            .add(Kind.suspend)
            .add(Kind.resume, B)
            .add(Kind.execute)
            .list();
    assertInvalidAt(3, "expected signer", c, Optional.of(A.publicKey()));
  }

  @Test
  void hostPublicKeyMustBeTheSigner() {
    List<Envelope> c =
        new Chain()
            .add(Kind.execute)
            .add(
                Kind.execute,
                B,
                core -> ((ObjectNode) core.get("host")).put("public_key", A.publicKey().hex()))
            .list();
    assertInvalidAt(1, "host.public_key differs from the envelope's signer", c, Optional.empty());
  }

  @Test
  void aNonSegmentCoreInTheChainFails() {
    Envelope receipt = Envelope.sign(RecordsTest.sampleReceipt().toCore(), A);
    List<Envelope> c = new ArrayList<>(new Chain().add(Kind.execute).list());
    c.add(receipt);
    SegmentChain.Verdict.Invalid inv = invalid(SegmentChain.verify(c, Optional.of(A.publicKey())));
    assertEquals(1, inv.seq());
    assertTrue(inv.reason().startsWith("segment."), inv.reason());
  }

  // ================================================================ random legal chains

  /** A legal kind sequence of 1..12 segments: execute first, suspend → resume → execute. */
  static List<Kind> legalKinds(Seeded g) {
    List<Kind> kinds = new ArrayList<>(List.of(Kind.execute));
    for (int choice : g.list(0, 11, () -> g.intBetween(0, 1))) {
      Kind last = kinds.get(kinds.size() - 1);
      kinds.add(
          switch (last) {
            case execute -> choice == 0 ? Kind.execute : Kind.suspend;
            case suspend -> Kind.resume;
            case resume -> Kind.execute;
          });
    }
    return kinds;
  }

  @Test
  void everyLegalChainVerifiesAndAnyAlteredSegmentIsFound() {
    Seeded.repeat(
        100,
        g -> {
          List<Kind> kinds = legalKinds(g);
          int pick = g.intBetween(0, 1000);
          Chain ch = new Chain();
          for (Kind k : kinds) {
            ch.add(k);
          }
          List<Envelope> c = ch.list();
          SegmentChain.Verdict.Valid v =
              assertInstanceOf(
                  SegmentChain.Verdict.Valid.class,
                  SegmentChain.verify(c, Optional.of(A.publicKey())));
          assertEquals(kinds.size(), v.length());
          assertEquals(c.get(c.size() - 1).address(), v.head());

          int k = pick % c.size();
          ObjectNode altered = (ObjectNode) c.get(k).core().deepCopy();
          altered.put("idle_uj", altered.get("idle_uj").longValue() + 1);
          Envelope e = c.get(k);
          List<Envelope> forged =
              withSegment(c, k, new Envelope(altered, e.address(), e.signature(), e.publicKey()));
          SegmentChain.Verdict.Invalid inv = invalid(SegmentChain.verify(forged, Optional.empty()));
          assertEquals(k, inv.seq());
          assertTrue(inv.reason().startsWith("address mismatch"), inv.reason());
        });
  }

  // ================================================================ forks and totals

  @Test
  void twoDifferentSegmentsAtOneSeqAreReportedAsAFork() {
    List<Envelope> c = new Chain().add(Kind.execute).add(Kind.execute).list();
    Chain other = new Chain();
    other.envs.add(c.get(0));
    other.add(Kind.suspend);
    List<Envelope> both = new ArrayList<>(c);
    both.add(other.envs.get(1));
    assertInvalidAt(1, "fork: two different segments at seq 1", both);
    EvidenceBundle.Verdict.Invalid inv =
        assertInstanceOf(
            EvidenceBundle.Verdict.Invalid.class, EvidenceBundle.verify(both, Set.of()));
    assertTrue(inv.reason().startsWith("fork: "), inv.reason());
    assertEquals("seq 1 of run run-1", inv.where());
    // The same segment twice is a duplicate, not a fork: it fails on the dense seq instead.
    List<Envelope> dup = new ArrayList<>(c);
    dup.add(c.get(1));
    assertInvalidAt(2, "seq is 1, expected 2", dup);
    assertTrue(SegmentChain.fork(dup).isEmpty());
  }

  @Test
  void suspendAndResumeNameNoReceiptAndExecuteNoSnapshot() {
    assertInvalidAt(
        1,
        "names no receipt",
        new Chain()
            .add(Kind.execute)
            .add(Kind.suspend, core -> core.put("receipt", "4".repeat(64)))
            .list());
    assertInvalidAt(
        1,
        "carries no snapshot",
        new Chain()
            .add(Kind.execute)
            .add(Kind.execute, core -> core.set("snapshot", SNAP.toJson()))
            .list());
  }

  @Test
  void theRunTotalIsTheReceiptsPlusTheIdleEnergy() {
    Seeded.repeat(
        20,
        g -> {
          long idle = g.longBetween(0, 1_000_000_000L);
          List<Envelope> receipts = new ArrayList<>();
          List<Envelope> segs = new ArrayList<>();
          long expectedReceipts = 0;
          Kind[] kinds = {Kind.execute, Kind.suspend, Kind.resume, Kind.execute};
          for (int seq = 0; seq < kinds.length; seq++) {
            String receipt = null;
            if (kinds[seq] == Kind.execute) {
              long uj = g.longBetween(0, 1_000_000_000L);
              expectedReceipts += uj;
              Envelope r =
                  Envelope.sign(
                      Receipt.builder()
                          .runId("run-1")
                          .unit("5".repeat(64))
                          .grantsId(GRANTS)
                          .tier("S2")
                          .energy(
                              java.util.Map.of(
                                  DeviceClass.Cpu,
                                  new ClassEnergy(uj, Provenance.Estimator, "estimator", 1, 1)))
                          .build()
                          .toCore(),
                      A);
              receipts.add(r);
              receipt = r.address();
            }
            RunSegment s =
                new RunSegment(
                    "run-1",
                    seq,
                    kinds[seq],
                    segs.isEmpty() ? null : segs.get(segs.size() - 1).address(),
                    "h",
                    A.publicKey().hex(),
                    "S2",
                    GRANTS,
                    receipt,
                    kinds[seq] == Kind.execute ? null : SNAP,
                    kinds[seq] == Kind.resume ? idle : 0,
                    Provenance.Estimator,
                    seq);
            segs.add(Envelope.sign(s.toCore(), A));
          }
          List<Envelope> all = new ArrayList<>(receipts);
          all.addAll(segs);
          EvidenceBundle.Verdict.Valid ok =
              assertInstanceOf(
                  EvidenceBundle.Verdict.Valid.class, EvidenceBundle.verify(all, Set.of()));
          EvidenceBundle.RunTotal t = ok.totals().get(0);
          assertTrue(t.receiptsGiven());
          assertEquals(expectedReceipts, t.receiptsUj());
          assertEquals(idle, t.idleUj());
          assertEquals(expectedReceipts + idle, t.totalUj());
          // Without the receipts the total is marked incomplete.
          EvidenceBundle.Verdict.Valid bare =
              assertInstanceOf(
                  EvidenceBundle.Verdict.Valid.class, EvidenceBundle.verify(segs, Set.of()));
          assertTrue(!bare.totals().get(0).receiptsGiven());
        });
  }
}
