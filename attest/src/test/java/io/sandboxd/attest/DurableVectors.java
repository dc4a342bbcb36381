package io.sandboxd.attest;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.RunSegment.Kind;
import io.sandboxd.attest.RunSegment.SnapshotRef;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The tool that makes durable.json (WIRE.md §2.6, conformance checks 19–20): SnapshotRefs and
 * segments of every kind with their canonical core bytes, addresses and Ed25519 signatures under
 * fixed keys, a whole exported chain (receipts and segments, moved to a second host on resume) with
 * its verdict and energy total, and tampered variants with the verdict each must get. {@code
 * DurableVectorsTest} regenerates and compares byte for byte; run {@code main} (or that test with
 * {@code -Dsandboxd.vectors.write=true}) to rewrite it.
 */
public final class DurableVectors {
  /** The first host's key: seed bytes 0x00..0x1f (the manifest vectors' key). */
  static final SigningKey HOST_A = ManifestVectors.KEY;

  /** The host the run moves to: seed bytes 0x20..0x3f. */
  static final SigningKey HOST_B = SeededKeys.counting(0x20);

  static final String RUN = "durable-vector-run";
  static final String UNIT = Blake3.hex("(module)".getBytes(StandardCharsets.UTF_8));

  /** grants_id of {@code {"compute":...}} as in force; the drifted variants use others. */
  static final String GRANTS = "9eb3c67383235c3769a0821dd660df26e48e96934ab5c224cb2391f0f7796406";

  static final String WIDER_GRANTS = Blake3.hex("a wider grant".getBytes(StandardCharsets.UTF_8));
  static final String MANIFEST = Blake3.hex("manifest M1".getBytes(StandardCharsets.UTF_8));
  static final String DRIFTED_MANIFEST = Blake3.hex("manifest M2".getBytes(StandardCharsets.UTF_8));

  static final SnapshotRef SNAPSHOT =
      new SnapshotRef(
          Blake3.hex("fs tree".getBytes(StandardCharsets.UTF_8)),
          Blake3.hex("memory".getBytes(StandardCharsets.UTF_8)),
          MANIFEST,
          GRANTS,
          List.of("storage:inbox/**", "net:api.example.com:443"),
          Blake3.hex(new byte[0]));

  /** A snapshot of a unit without memory and without taint. */
  static final SnapshotRef BARE =
      new SnapshotRef(
          Blake3.hex(new byte[0]), null, MANIFEST, GRANTS, List.of(), Blake3.hex(new byte[0]));

  private static final long T0 = 1_767_225_600_000L;

  private DurableVectors() {}

  /** {@link #SNAPSHOT} with another manifest, grants_id or taint: what a tampered resume thaws. */
  private static SnapshotRef thawing(String manifest, String grantsId, List<String> taint) {
    return new SnapshotRef(
        SNAPSHOT.fs(), SNAPSHOT.memory(), manifest, grantsId, taint, SNAPSHOT.journalRoot());
  }

  static Envelope receipt(int step, SigningKey host) {
    Map<DeviceClass, ClassEnergy> energy = new EnumMap<>(DeviceClass.class);
    energy.put(
        DeviceClass.Cpu,
        new ClassEnergy(1_000_000L * (step + 1), Provenance.Estimator, "estimator", 1, 10_000_000));
    Receipt r =
        Receipt.builder()
            .runId(RUN)
            .unit(UNIT)
            .grantsId(GRANTS)
            .tier("S2")
            .energy(energy)
            .cpuTimeMs(10L * (step + 1))
            .memoryPeakBytes(65_536)
            .wallMs(12L * (step + 1))
            .startedMs(T0 + 10_000L * step)
            .endedMs(T0 + 10_000L * step + 12L * (step + 1))
            .build();
    return Envelope.sign(r.toCore(), host);
  }

  /** The chain's kinds by seq: execute, execute, suspend (host A); resume, execute (host B). */
  static final Kind[] KINDS = {Kind.execute, Kind.execute, Kind.suspend, Kind.resume, Kind.execute};

  /** The grant's CPU ms and µJ (in force for the whole chain). */
  static final long GRANTED_CPU_MS = 100;

  static final long GRANTED_UJ = 10_000_000;

  /**
   * The budget a correct node signs at {@code seq} of the chain under a grant of {@code grantedMs}:
   * each execute segment at step s consumed what {@link #receipt} says (10 (s+1) ms, 10^6 (s+1)
   * µJ), cumulatively.
   */
  static RunSegment.Budget budgetAt(long seq, long grantedMs) {
    long ms = 0;
    long uj = 0;
    for (int s = 0; s <= seq && s < KINDS.length; s++) {
      if (KINDS[s] == Kind.execute) {
        ms += 10L * (s + 1);
        uj += 1_000_000L * (s + 1);
      }
    }
    return new RunSegment.Budget(grantedMs, GRANTED_UJ, ms, uj);
  }

  static RunSegment segment(
      long seq, Kind kind, String prev, SigningKey host, String receipt, SnapshotRef snap) {
    return segment(seq, kind, prev, host, receipt, snap, budgetAt(seq, GRANTED_CPU_MS));
  }

  private static RunSegment segment(
      long seq,
      Kind kind,
      String prev,
      SigningKey host,
      String receipt,
      SnapshotRef snap,
      RunSegment.Budget budget) {
    return new RunSegment(
        RUN,
        seq,
        kind,
        prev,
        host == HOST_A ? "host-a" : "host-b",
        host.publicKey().hex(),
        "S2",
        GRANTS,
        receipt,
        snap,
        kind == Kind.resume ? 42_000_000 : 0,
        kind == Kind.resume ? Provenance.Estimator : Provenance.HwShunt,
        T0 + 10_000L * seq + 5_000,
        budget);
  }

  /**
   * The exported chain: execute, execute, suspend on host A; resume, execute on host B. Receipts
   * come first, then the segments in seq order.
   */
  record Chain(List<Envelope> receipts, List<Envelope> segments) {
    List<Envelope> all() {
      List<Envelope> out = new ArrayList<>(receipts);
      out.addAll(segments);
      return out;
    }
  }

  static Chain chain() {
    return chain(KINDS.length, GRANTED_CPU_MS, -1, 0);
  }

  /**
   * The first {@code length} segments of the chain under a grant of {@code grantedMs}, with the CPU
   * ms consumed at {@code offSeq} (none if negative) off by {@code offMs}; every record is properly
   * signed, so only the budget rules can catch what is wrong.
   */
  static Chain chain(int length, long grantedMs, int offSeq, long offMs) {
    Kind[] kinds = java.util.Arrays.copyOf(KINDS, length);
    List<Envelope> receipts = new ArrayList<>();
    List<Envelope> segments = new ArrayList<>();
    String prev = null;
    for (int seq = 0; seq < kinds.length; seq++) {
      SigningKey host = seq < 3 ? HOST_A : HOST_B;
      String receipt = null;
      if (kinds[seq] == Kind.execute) {
        Envelope r = receipt(seq, host);
        receipts.add(r);
        receipt = r.address();
      }
      SnapshotRef snap = kinds[seq] == Kind.execute ? null : SNAPSHOT;
      RunSegment.Budget b = budgetAt(seq, grantedMs);
      if (seq >= offSeq && offSeq >= 0) {
        b =
            new RunSegment.Budget(
                b.grantedCpuMs(), b.grantedUj(), b.consumedCpuMs() + offMs, b.consumedUj());
      }
      Envelope s =
          Envelope.sign(segment(seq, kinds[seq], prev, host, receipt, snap, b).toCore(), host);
      segments.add(s);
      prev = s.address();
    }
    return new Chain(receipts, segments);
  }

  /** A tampered variant of the chain's segments and the verdict it must get. */
  record Tampered(String name, String what, List<Envelope> segments, long failsAt, String reason) {}

  static List<Tampered> tampered() {
    Chain c = chain();
    List<Tampered> out = new ArrayList<>();
    List<Envelope> segs = c.segments();

    List<Envelope> flipped = new ArrayList<>(segs);
    flipped.set(1, flipByte(segs.get(1)));
    out.add(
        new Tampered(
            "flipped-byte",
            "one byte of seq 1's core changed (a digit of at_ms), address and signature kept",
            flipped,
            1,
            "address"));

    List<Envelope> reordered = new ArrayList<>(segs);
    reordered.set(1, segs.get(2));
    reordered.set(2, segs.get(1));
    out.add(new Tampered("reordered", "seq 1 and seq 2 swapped", reordered, 1, "seq"));

    List<Envelope> missing = new ArrayList<>(segs);
    missing.remove(2);
    out.add(new Tampered("missing", "the suspend (seq 2) left out", missing, 2, "seq"));

    List<Envelope> duplicated = new ArrayList<>(segs);
    duplicated.add(2, segs.get(1));
    out.add(new Tampered("duplicated", "seq 1 given twice", duplicated, 2, "seq"));

    List<Envelope> forked = new ArrayList<>(segs);
    RunSegment other = segment(1, Kind.suspend, segs.get(0).address(), HOST_A, null, SNAPSHOT);
    forked.add(Envelope.sign(other.toCore(), HOST_A));
    out.add(
        new Tampered(
            "forked",
            "a second, different segment at seq 1, properly signed by the same host",
            forked,
            1,
            "fork"));

    out.add(
        new Tampered(
            "drifted-manifest",
            "the resume (seq 3) names another environment manifest than the suspend froze",
            resumeWith(segs, thawing(DRIFTED_MANIFEST, SNAPSHOT.grantsId(), SNAPSHOT.taint())),
            3,
            "snapshot"));
    out.add(
        new Tampered(
            "wider-grants",
            "the resume (seq 3) thaws under another (wider) grants_id than the suspend froze",
            resumeWith(segs, thawing(SNAPSHOT.manifest(), WIDER_GRANTS, SNAPSHOT.taint())),
            3,
            "snapshot"));
    out.add(
        new Tampered(
            "taint-laundered",
            "the resume (seq 3) drops the taint the suspend carried",
            resumeWith(segs, thawing(SNAPSHOT.manifest(), SNAPSHOT.grantsId(), List.of())),
            3,
            "snapshot"));
    return out;
  }

  /**
   * A chain checked with its receipts against trusted keys, and the verdict a verifier must give:
   * valid, or invalid at {@code where} for a reason containing {@code kind}.
   */
  record BudgetCase(
      String name,
      String what,
      List<SigningKey> trusted,
      List<Envelope> envelopes,
      String where,
      String kind) {}

  static List<BudgetCase> budgetCases() {
    List<SigningKey> both = List.of(HOST_A, HOST_B);
    List<BudgetCase> out = new ArrayList<>();
    out.add(
        new BudgetCase(
            "cumulative-consistent",
            "each segment's budget.consumed is the previous one's plus its own receipt; within"
                + " the grant throughout",
            both,
            chain().all(),
            null,
            null));
    out.add(
        new BudgetCase(
            "cumulative-does-not-add-up",
            "host-b's execute (seq 4) signs 20 ms less consumed than seq 3's plus its receipt"
                + " (a budget reset after the move)",
            both,
            chain(KINDS.length, GRANTED_CPU_MS, 4, -20).all(),
            "run " + RUN,
            "does not add up"));
    out.add(
        new BudgetCase(
            "exceeds-grant",
            "a grant of 25 ms: seq 1 brings the run to 30 ms and the chain goes on (parked and"
                + " resumed past its budget)",
            both,
            chain(KINDS.length, 25, -1, 0).all(),
            "seq 1 of run " + RUN,
            "budget exceeded"));
    out.add(
        new BudgetCase(
            "breach-ends-chain",
            "a grant of 25 ms: seq 1 breaches at 30 ms and the chain ends there (the watchdog's"
                + " overshoot in the segment that breached is allowed)",
            List.of(HOST_A),
            chain(2, 25, -1, 0).all(),
            null,
            null));
    Chain moved = chain();
    int firstB = 0;
    while (!moved.all().get(firstB).publicKey().equals(HOST_B.publicKey().hex())) {
      firstB++;
    }
    out.add(
        new BudgetCase(
            "untrusted-key",
            "the moved chain checked trusting host-a only: host-b's records are refused, naming"
                + " its key (as an import with durable.trusted_nodes refuses an untrusted node)",
            List.of(HOST_A),
            moved.all(),
            "item " + firstB,
            HOST_B.publicKey().hex()));
    return out;
  }

  /** The chain up to the suspend, then a properly signed resume carrying {@code snap}. */
  private static List<Envelope> resumeWith(List<Envelope> segs, SnapshotRef snap) {
    List<Envelope> out = new ArrayList<>(segs.subList(0, 3));
    RunSegment r = segment(3, Kind.resume, segs.get(2).address(), HOST_B, null, snap);
    out.add(Envelope.sign(r.toCore(), HOST_B));
    return out;
  }

  /** The envelope with one digit of its core's at_ms changed; address and signature kept. */
  static Envelope flipByte(Envelope e) {
    ObjectNode core = e.core().deepCopy();
    core.put("at_ms", core.get("at_ms").asLong() ^ 1);
    ObjectNode json = e.toJson();
    json.set("core", core);
    return Envelope.fromJson(json);
  }

  /** The vectors file's text. */
  static String generate() {
    ObjectNode root = CanonicalJson.mapper().createObjectNode();
    root.put(
        "description",
        "sandbox.run-segment/1 vectors (WIRE.md 2.6, conformance checks 19-20): SnapshotRefs and"
            + " segments of every kind (canonical core bytes, BLAKE3 addresses, Ed25519 signatures"
            + " under fixed keys), a whole exported chain moved from host-a to host-b at its"
            + " resume, and tampered variants with the position (index in the list as given) and"
            + " kind of the failure a verifier must report. total_uj = sum of the receipts'"
            + " total_uj + sum of the segments' idle_uj. budget_cases: chains with their"
            + " receipts checked against the trusted keys listed: budget.consumed must equal the"
            + " previous segment's plus the execute segment's receipt (cpu_time_ms, total_uj),"
            + " and only a chain's last (execute) segment may exceed budget.granted. Generated by"
            + " attest/src/test/java/io/sandboxd/attest/DurableVectors.java.");
    ArrayNode keys = root.putArray("keys");
    keys.addObject()
        .put("name", "host-a")
        .put("seed", seedHex(0x00))
        .put("public_key", HOST_A.publicKey().hex());
    keys.addObject()
        .put("name", "host-b")
        .put("seed", seedHex(0x20))
        .put("public_key", HOST_B.publicKey().hex());

    ArrayNode refs = root.putArray("snapshot_refs");
    for (Map.Entry<String, SnapshotRef> e :
        Map.of("full", SNAPSHOT, "bare", BARE).entrySet().stream()
            .sorted(Map.Entry.comparingByKey())
            .toList()) {
      byte[] bytes = CanonicalJson.canonicalize(e.getValue().toJson());
      refs.addObject()
          .put("name", e.getKey())
          .put("canonical", new String(bytes, StandardCharsets.UTF_8))
          .put("address", Blake3.hex(bytes));
    }

    Chain c = chain();
    ArrayNode segs = root.putArray("segments");
    for (Envelope s : c.segments()) {
      describe(segs.addObject(), s).put("kind", s.core().get("kind").textValue());
    }
    Envelope bareSuspend =
        Envelope.sign(
            segment(1, Kind.suspend, c.segments().get(0).address(), HOST_A, null, BARE).toCore(),
            HOST_A);
    describe(segs.addObject(), bareSuspend).put("kind", "suspend");
    ArrayNode receipts = root.putArray("receipts");
    for (Envelope r : c.receipts()) {
      describe(receipts.addObject(), r);
    }

    ObjectNode chain = root.putObject("chain");
    ArrayNode envs = chain.putArray("envelopes");
    c.all().forEach(e -> envs.add(e.toJson()));
    EvidenceBundle.Verdict v =
        EvidenceBundle.verify(c.all(), java.util.Set.of(HOST_A.publicKey(), HOST_B.publicKey()));
    if (!(v instanceof EvidenceBundle.Verdict.Valid ok)) {
      throw new IllegalStateException("the vector chain does not verify: " + v);
    }
    EvidenceBundle.RunTotal t = ok.totals().get(0);
    chain
        .putObject("verdict")
        .put("valid", true)
        .put("length", c.segments().size())
        .put("head", c.segments().get(c.segments().size() - 1).address())
        .put("receipts_uj", t.receiptsUj())
        .put("idle_uj", t.idleUj())
        .put("total_uj", t.totalUj());

    ArrayNode bad = root.putArray("tampered");
    for (Tampered x : tampered()) {
      SegmentChain.Verdict sv = SegmentChain.verify(x.segments(), Optional.empty());
      if (!(sv instanceof SegmentChain.Verdict.Invalid inv) || inv.seq() != x.failsAt()) {
        throw new IllegalStateException(
            x.name() + ": expected to fail at " + x.failsAt() + ": " + sv);
      }
      ObjectNode o = bad.addObject();
      o.put("name", x.name());
      o.put("what", x.what());
      ArrayNode list = o.putArray("segments");
      x.segments().forEach(e -> list.add(e.toJson()));
      o.putObject("verdict")
          .put("valid", false)
          .put("fails_at", x.failsAt())
          .put("kind", x.reason());
    }
    ArrayNode budgets = root.putArray("budget_cases");
    for (BudgetCase b : budgetCases()) {
      java.util.Set<PublicKey> trusted = new java.util.LinkedHashSet<>();
      b.trusted().forEach(k -> trusted.add(k.publicKey()));
      EvidenceBundle.Verdict bv = EvidenceBundle.verify(b.envelopes(), trusted);
      boolean expectValid = b.where() == null;
      if (expectValid != bv instanceof EvidenceBundle.Verdict.Valid
          || (bv instanceof EvidenceBundle.Verdict.Invalid inv
              && (!inv.where().startsWith(b.where()) || !inv.reason().contains(b.kind())))) {
        throw new IllegalStateException(b.name() + ": unexpected verdict " + bv);
      }
      ObjectNode o = budgets.addObject();
      o.put("name", b.name());
      o.put("what", b.what());
      ArrayNode tk = o.putArray("trusted");
      b.trusted().forEach(k -> tk.add(k.publicKey().hex()));
      ArrayNode list = o.putArray("envelopes");
      b.envelopes().forEach(e -> list.add(e.toJson()));
      ObjectNode want = o.putObject("verdict").put("valid", expectValid);
      if (!expectValid) {
        want.put("where", b.where()).put("kind", b.kind());
      }
    }
    return VectorFiles.text(root);
  }

  private static ObjectNode describe(ObjectNode o, Envelope e) {
    o.put("core", new String(CanonicalJson.canonicalize(e.core()), StandardCharsets.UTF_8));
    o.put("address", e.address());
    o.put("signature", e.signature());
    o.put("public_key", e.publicKey());
    return o;
  }

  private static String seedHex(int first) {
    return Hex.encode(SeededKeys.countingSeed(first));
  }

  /** Writes the vectors file to {@code args[0]}. */
  public static void main(String[] args) throws IOException {
    VectorFiles.write(args, "vectors/durable/durable.json", generate());
  }
}
