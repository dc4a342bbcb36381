package io.sandboxd.daemon;

import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.wasm.Parser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.FleetAggregate;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.HostIdentity;
import io.sandboxd.attest.LogCheckpoint;
import io.sandboxd.attest.MerkleTree;
import io.sandboxd.attest.NoteVerifier;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.StoreCheckpoint;
import io.sandboxd.attest.StoreHead;
import io.sandboxd.attest.StoredRun;
import io.sandboxd.attest.WarmpoolClaim;
import io.sandboxd.attest.WarmpoolEvict;
import io.sandboxd.daemon.durable.BundleSeal;
import io.sandboxd.daemon.durable.RunBundle;
import io.sandboxd.daemon.fleet.FleetDocs;
import io.sandboxd.executor.InstanceSnapshot;
import io.sandboxd.executor.Journal;
import io.sandboxd.executor.JournalEntry;
import io.sandboxd.executor.SnapshotStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The tool that makes the interop vectors of issue 25 (docs/WIRE.md): every record schema the code
 * writes, made by the production classes, with canonical bytes, address and an Ed25519 signature
 * under a fixed key ({@code vectors/records/records.json}); one file per conformance case with the
 * verdict a verifier must give ({@code vectors/records/cases/}, indexed by {@code cases.tsv}); and
 * BLAKE3-tree inclusion and consistency proofs for every index and size 1..64 ({@code
 * vectors/merkle-blake3/proofs.json}). {@code InteropVectorsTest} regenerates and compares byte for
 * byte.
 */
final class InteropVectors {
  /** The node's key: seed bytes 0x00..0x1f (the manifest and durable vectors' first key). */
  static final SigningKey NODE = key(0x00);

  /** A key nobody trusts: seed bytes 0x50..0x6f. */
  static final SigningKey STRANGER = key(0x50);

  static final String ORIGIN = "sandboxd/vector-node";
  static final String RUN = "interop-vector-run";
  static final String GRANTS = "9eb3c67383235c3769a0821dd660df26e48e96934ab5c224cb2391f0f7796406";
  static final String GRANTS_TEXT =
      "{\"compute\":{\"cpu_time_ms\":0,\"devices\":[],\"energy_budget_uj\":0,\"memory_bytes\":0},"
          + "\"host\":{\"clock\":false,\"inference\":false,\"logging\":false,\"random\":false},"
          + "\"kv\":{\"prefixes\":[],\"read\":false,\"write\":false},"
          + "\"network\":{\"inbound\":false,\"outbound\":[]},"
          + "\"storage\":{\"delete\":[],\"read\":[],\"write\":[]}}";

  /**
   * A module with one memory page (byte 0 = 0x2a from a data segment) and one mutable i32 global
   * (42): small enough to write by hand, and it gives an instance snapshot a page and a global.
   */
  static final byte[] MODULE = {
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00, // magic, version 1
    0x05,
    0x03,
    0x01,
    0x00,
    0x01, // memory section: one memory, min 1 page
    0x06,
    0x06,
    0x01,
    0x7f,
    0x01,
    0x41,
    0x2a,
    0x0b, // global section: mut i32 = 42
    0x0b,
    0x07,
    0x01,
    0x00,
    0x41,
    0x00,
    0x0b,
    0x01,
    0x2a // data section: byte 0x2a at 0
  };

  static final String UNIT = Blake3.hex(MODULE);
  private static final long T0 = 1_767_225_600_000L;

  /** Node-log proofs cover every size 1..MAX_SIZE. */
  static final int MAX_SIZE = 64;

  private InteropVectors() {}

  static SigningKey key(int first) {
    byte[] seed = new byte[32];
    for (int i = 0; i < seed.length; i++) {
      seed[i] = (byte) (first + i);
    }
    return SigningKey.fromSeed(seed);
  }

  /** One conformance case: a file's bytes, the key to pin (or none) and the verdict. */
  record Case(String name, String file, byte[] bytes, SigningKey signer, String verdict) {}

  /** Every generated file, by path relative to vectors/. */
  static Map<String, String> generate() {
    Map<String, String> out = new LinkedHashMap<>();
    Records r = new Records();
    out.put("records/records.json", pretty(r.json));
    StringBuilder tsv =
        new StringBuilder("# name\tfile\tsigner (public key hex, or -)\texpected verdict\n");
    for (Case c : r.cases) {
      out.put("records/" + c.file(), new String(c.bytes(), StandardCharsets.UTF_8));
      tsv.append(c.name())
          .append('\t')
          .append(c.file())
          .append('\t')
          .append(c.signer() == null ? "-" : c.signer().publicKey().hex())
          .append('\t')
          .append(c.verdict())
          .append('\n');
    }
    out.put("records/cases.tsv", tsv.toString());
    out.put("merkle-blake3/proofs.json", oneElementPerLine(merkle()));
    return out;
  }

  /** JSON with each top-level array element on its own line: compact, yet a diff stays readable. */
  static String oneElementPerLine(ObjectNode o) {
    StringBuilder b = new StringBuilder("{");
    String sep = "\n";
    for (var it = o.fields(); it.hasNext(); ) {
      var f = it.next();
      b.append(sep).append(CanonicalJson.canonicalString(o.textNode(f.getKey()))).append(':');
      if (f.getValue().isArray()) {
        b.append('[');
        String inner = "\n";
        for (JsonNode e : f.getValue()) {
          b.append(inner).append(CanonicalJson.canonicalString(e));
          inner = ",\n";
        }
        b.append("\n]");
      } else {
        b.append(CanonicalJson.canonicalString(f.getValue()));
      }
      sep = ",\n";
    }
    return b.append("\n}\n").toString();
  }

  static String pretty(JsonNode n) {
    try {
      return CanonicalJson.mapper().writerWithDefaultPrettyPrinter().writeValueAsString(n) + "\n";
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  // ---- the records ----

  /** Builds every record once, in link order, and the cases over them. */
  private static final class Records {
    final ObjectNode json = CanonicalJson.mapper().createObjectNode();
    final ArrayNode records;
    final List<Case> cases = new ArrayList<>();
    final List<String> logLeaves = new ArrayList<>();
    final List<String> logKinds = new ArrayList<>();

    Records() {
      json.put(
          "description",
          "sandboxd record vectors (docs/WIRE.md): canonical core bytes, BLAKE3 address and"
              + " Ed25519 signature of every record schema, made by the production code; 'cases'"
              + " lists the conformance cases (cases.tsv) and the verdict each must get.");
      ArrayNode keys = json.putArray("keys");
      keys.addObject()
          .put("name", "node")
          .put("seed", seedHex(0x00))
          .put("public_key", NODE.publicKey().hex());
      keys.addObject()
          .put("name", "stranger")
          .put("seed", seedHex(0x50))
          .put("public_key", STRANGER.publicKey().hex());
      records = json.putArray("records");

      List<JournalEntry> journal = journal();
      String journalRoot = Journal.rootOf(journal);
      Envelope receipt = signed("receipt", receipt(RUN, 0, 5_000), "receipt");
      Envelope receipt2 = signed("second receipt", receipt(RUN + "-2", 1, 0), "receipt");
      Envelope attestation =
          signed("attestation", attestation(receipt.address(), journalRoot), "attestation");
      RunSegment seg =
          new RunSegment(
              RUN,
              0,
              RunSegment.Kind.execute,
              null,
              "vector-node",
              NODE.publicKey().hex(),
              "S2",
              GRANTS,
              receipt.address(),
              null,
              0,
              Provenance.Estimator,
              T0 + 20);
      Envelope segment = signed("execute segment", seg.toCore(), "segment");
      Envelope claim =
          signed(
              "warm-pool claim",
              new WarmpoolClaim(
                      "pool-a",
                      "inst-1",
                      T0 - 60_000,
                      T0,
                      "S2",
                      null,
                      5_000,
                      Provenance.Estimator,
                      RUN)
                  .toCore(),
              "claim");
      Envelope evict =
          signed(
              "warm-pool eviction",
              new WarmpoolEvict(
                      "pool-a",
                      "inst-2",
                      T0 - 60_000,
                      T0 + 1_000,
                      WarmpoolEvict.Reason.Ttl,
                      7_500,
                      Provenance.Estimator)
                  .toCore(),
              "eviction");
      String log = "hello from the vector run\n";
      StoredRun stored =
          new StoredRun(
              0,
              RUN,
              T0,
              UNIT,
              GRANTS,
              new Outcome.Completed(),
              "run",
              StoredRun.textAddress(GRANTS_TEXT),
              StoredRun.textAddress(log),
              StoredRun.textBytes(log),
              segment.address(),
              receipt.address(),
              attestation.address());
      Envelope storeRun = signed("store run", stored.toCore(), "stored-run");
      String chain = StoreHead.extend(StoreHead.EMPTY_CHAIN, storeRun.address());
      Envelope head = signed("store head", new StoreHead(1, chain, T0 + 30).toCore(), null);
      Envelope checkpoint =
          signed(
              "store checkpoint",
              new StoreCheckpoint(1, chain, T0 + 40).toCore(),
              "store-checkpoint");
      FleetAggregate agg1 =
          FleetAggregate.over(
              ORIGIN,
              0,
              List.of(
                  new FleetAggregate.Item(receipt.address(), Receipt.fromCore(receipt.core()))));
      FleetAggregate agg2 =
          FleetAggregate.over(
              ORIGIN,
              0,
              List.of(
                  new FleetAggregate.Item(receipt.address(), Receipt.fromCore(receipt.core())),
                  new FleetAggregate.Item(receipt2.address(), Receipt.fromCore(receipt2.core()))));
      Envelope fleet1 = signed("fleet aggregate of 1", agg1.toCore(), null);
      Envelope fleet2 = signed("fleet aggregate of 2", agg2.toCore(), null);

      // Content-addressed records (not signed): what a snapshot, a journal and a bundle name.
      ObjectNode content = json.putObject("content");
      ArrayNode entries = content.putArray("journal_entries");
      for (JournalEntry e : journal) {
        entries
            .addObject()
            .put("canonical", e.canonicalString())
            .put("address", Blake3.hex(e.canonicalBytes()))
            .put("leaf", Hex.encode(leafOfEntry(e)));
      }
      content.put("journal_root", journalRoot);
      content.put("empty_journal_root", Journal.rootOf(List.of()));
      content.set("fs_tree", canonical(fsTree()));
      content.set("instance_snapshot", canonical(instanceSnapshot()));
      content.put("module_base64", java.util.Base64.getEncoder().encodeToString(MODULE));
      content.put("module_address", UNIT);
      RunBundle bundle =
          new RunBundle(
              RUN,
              MODULE,
              GRANTS_TEXT,
              "run",
              List.of(segment),
              List.of(log),
              List.of(receipt, attestation),
              Map.of(),
              List.of(),
              Optional.empty());
      content.set("run_bundle", canonical(bundle.toBytes()));
      // The same bundle sealed by the exporting node for one destination (the stranger's key).
      RunBundle sealed = BundleSeal.seal(bundle, NODE, STRANGER.publicKey().hex());
      content.set("run_bundle_sealed", canonical(sealed.toBytes()));
      content.set("run_bundle_seal", sealed.seal().orElseThrow().toJson());

      // The node log over every logged record above, its checkpoints and proofs.
      List<byte[]> raw = new ArrayList<>();
      logLeaves.forEach(a -> raw.add(Hex.decode(a, 32, "leaf")));
      MerkleTree tree = MerkleTree.blake3(raw);
      int n = raw.size();
      String noteNew = LogCheckpoint.of(ORIGIN, tree.head()).sign(NODE);
      String noteOld = LogCheckpoint.of(ORIGIN, tree.head(2)).sign(NODE);
      String noteStranger = LogCheckpoint.of(ORIGIN, tree.head()).sign(STRANGER);
      ObjectNode nodeLog = json.putObject("node_log");
      nodeLog.put("origin", ORIGIN);
      nodeLog.put("vkey", new NoteVerifier(ORIGIN, NODE.publicKey()).vkey());
      ArrayNode leaves = nodeLog.putArray("leaves");
      for (int i = 0; i < n; i++) {
        leaves.addObject().put("address", logLeaves.get(i)).put("kind", logKinds.get(i));
      }
      nodeLog.put("tree_size", n);
      nodeLog.put("root", Hex.encode(tree.root()));
      nodeLog.put("checkpoint", noteNew);
      nodeLog.put("checkpoint_at_2", noteOld);
      int attIndex = logLeaves.indexOf(attestation.address());
      ObjectNode logProof =
          FleetDocs.logProof(
              noteNew, attestation.address(), "attestation", tree.inclusionProof(attIndex));
      ObjectNode logConsistency =
          FleetDocs.logConsistency(noteOld, noteNew, tree.consistencyProof(2));
      nodeLog.set("log_proof", logProof);
      nodeLog.set("log_consistency", logConsistency);
      MerkleTree fleetTree =
          MerkleTree.blake3(
              List.of(
                  Hex.decode(receipt.address(), 32, "r"), Hex.decode(receipt2.address(), 32, "r")));
      ObjectNode fleet = json.putObject("fleet");
      fleet.set(
          "fleet_proof",
          FleetDocs.fleetProof(
              fleet2.address(),
              RUN,
              List.of(new FleetDocs.ReceiptProof(receipt.address(), fleetTree.inclusionProof(0)))));
      fleet.set(
          "fleet_consistency",
          FleetDocs.fleetConsistency(
              fleet1.address(), fleet2.address(), fleetTree.consistencyProof(1)));
      fleet.put("aggregate", fleet2.address());
      fleet.put("old_aggregate", fleet1.address());

      // ---- conformance cases: what `VERIFIER [--signer KEY] FILE` must answer ----
      for (int i = 0; i < records.size(); i++) {
        JsonNode v = records.get(i);
        Envelope e = Envelope.fromJson(CanonicalJson.parse(v.get("envelope").textValue()));
        String slug = v.get("name").textValue().replace(' ', '-');
        add(slug + "-valid", e.toJsonLine(), NODE, "valid");
        // One verification policy (issue 24): no key named, no verdict; the verifier refuses.
        add(slug + "-unpinned-unusable", e.toJsonLine(), null, "unusable");
        add(
            slug + "-other-signer",
            Envelope.sign(e.core(), STRANGER).toJsonLine(),
            NODE,
            "invalid");
        add(slug + "-byte-flipped", flipOneCoreValue(e), NODE, "invalid");
        ObjectNode extra = (ObjectNode) e.core().deepCopy();
        extra.put("zz_unknown", 1);
        add(
            slug + "-unknown-field-resigned",
            Envelope.sign(extra, NODE).toJsonLine(),
            NODE,
            "invalid");
        ObjectNode wrongAddress = e.toJson();
        wrongAddress.put("address", Blake3.hex(new byte[0]));
        add(slug + "-wrong-address", CanonicalJson.canonicalString(wrongAddress), NODE, "invalid");
      }
      ObjectNode unknownTop = receipt.toJson();
      unknownTop.put("note", "not part of an envelope");
      add(
          "envelope-unknown-top-level-field",
          CanonicalJson.canonicalString(unknownTop),
          NODE,
          "unusable");
      add("not-json", "this is not a record\n", NODE, "unusable");
      ObjectNode badTotal = (ObjectNode) receipt.core().deepCopy();
      badTotal.put("total_uj", badTotal.get("total_uj").longValue() + 1);
      add("receipt-total-not-the-sum", Envelope.sign(badTotal, NODE).toJsonLine(), NODE, "invalid");
      add(
          "evidence-receipt-segment-attestation",
          lines(receipt, segment, attestation),
          NODE,
          "valid");
      ObjectNode otherUnit = (ObjectNode) attestation.core().deepCopy();
      otherUnit.put("unit", Blake3.hex("another module".getBytes(StandardCharsets.UTF_8)));
      add(
          "evidence-attestation-unit-differs",
          lines(receipt, segment, Envelope.sign(otherUnit, NODE)),
          NODE,
          "invalid");
      add("evidence-claim-matches-receipt-idle", lines(receipt, segment, claim), NODE, "valid");
      ObjectNode otherIdle = (ObjectNode) claim.core().deepCopy();
      otherIdle.put("accrued_idle_uj", 4_999);
      add(
          "evidence-claim-idle-differs",
          lines(receipt, segment, Envelope.sign(otherIdle, NODE)),
          NODE,
          "invalid");
      add(
          "evidence-two-signers-unpinned",
          lines(receipt, Envelope.sign(evict.core(), STRANGER)),
          null,
          "unusable");
      add(
          "evidence-two-signers-pinned",
          lines(receipt, Envelope.sign(evict.core(), STRANGER)),
          NODE,
          "invalid");
      add("log-checkpoint-valid", noteNew, NODE, "valid");
      add("log-checkpoint-by-stranger", noteStranger, NODE, "invalid");
      add("log-checkpoint-no-signer", noteNew, null, "unusable");
      add(
          "log-checkpoint-size-changed",
          noteNew.replaceFirst("\n" + n + "\n", "\n" + (n + 1) + "\n"),
          NODE,
          "invalid");
      add("log-proof-valid", CanonicalJson.canonicalString(logProof), NODE, "valid");
      ObjectNode wrongIndex = logProof.deepCopy();
      ((ObjectNode) wrongIndex.get("proof")).put("leaf_index", attIndex == 0 ? 1 : attIndex - 1);
      add("log-proof-wrong-leaf-index", CanonicalJson.canonicalString(wrongIndex), NODE, "invalid");
      ObjectNode otherAddress = logProof.deepCopy();
      otherAddress.put("address", receipt.address());
      add("log-proof-other-record", CanonicalJson.canonicalString(otherAddress), NODE, "invalid");
      ObjectNode strangerNote = logProof.deepCopy();
      strangerNote.put("checkpoint", noteStranger);
      add(
          "log-proof-checkpoint-by-stranger",
          CanonicalJson.canonicalString(strangerNote),
          NODE,
          "invalid");
      add("log-proof-no-signer", CanonicalJson.canonicalString(logProof), null, "unusable");
      add("log-consistency-valid", CanonicalJson.canonicalString(logConsistency), NODE, "valid");
      ObjectNode swapped = logConsistency.deepCopy();
      swapped.put("old", noteNew);
      swapped.put("new", noteOld);
      add("log-consistency-swapped", CanonicalJson.canonicalString(swapped), NODE, "invalid");
      ArrayNode caseList = json.putArray("cases");
      for (Case c : cases) {
        caseList
            .addObject()
            .put("name", c.name())
            .put("file", c.file())
            .put("signer", c.signer() == null ? null : c.signer().publicKey().hex())
            .put("verdict", c.verdict());
      }
      // Keep the unused links visible to a reader: the head is signed, not logged.
      json.put("store_head_address", head.address());
    }

    private Envelope signed(String name, ObjectNode core, String logKind) {
      Envelope e = Envelope.sign(core, NODE);
      byte[] bytes = CanonicalJson.canonicalize(core);
      records
          .addObject()
          .put("name", name)
          .put("schema", core.get("schema").textValue())
          .put("core", new String(bytes, StandardCharsets.UTF_8))
          .put("address", Blake3.hex(bytes))
          .put("signature", e.signature())
          .put("public_key", e.publicKey())
          .put("envelope", e.toJsonLine());
      if (logKind != null) {
        logLeaves.add(e.address());
        logKinds.add(logKind);
      }
      return e;
    }

    private void add(String name, String text, SigningKey signer, String verdict) {
      String file = String.format("cases/%03d-%s.json", cases.size(), name);
      cases.add(
          new Case(
              name,
              file,
              (text.endsWith("\n") ? text : text + "\n").getBytes(StandardCharsets.UTF_8),
              signer,
              verdict));
    }
  }

  private static String lines(Envelope... envelopes) {
    StringBuilder b = new StringBuilder();
    for (Envelope e : envelopes) {
      b.append(e.toJsonLine()).append('\n');
    }
    return b.toString();
  }

  /** The envelope with its first integer (or else string) core value changed, not re-signed. */
  private static String flipOneCoreValue(Envelope e) {
    ObjectNode core = (ObjectNode) e.core().deepCopy();
    for (var it = core.fields(); it.hasNext(); ) {
      var f = it.next();
      if (f.getValue().isIntegralNumber()) {
        core.put(f.getKey(), f.getValue().longValue() ^ 1);
        return envelopeText(core, e);
      }
    }
    core.put("schema", core.get("schema").textValue() + "x");
    return envelopeText(core, e);
  }

  private static String envelopeText(ObjectNode core, Envelope signedAs) {
    return CanonicalJson.canonicalString(
        new Envelope(core, signedAs.address(), signedAs.signature(), signedAs.publicKey())
            .toJson());
  }

  private static ObjectNode canonical(byte[] bytes) {
    return CanonicalJson.mapper()
        .createObjectNode()
        .put("canonical", new String(bytes, StandardCharsets.UTF_8))
        .put("address", Blake3.hex(bytes));
  }

  static byte[] leafOfEntry(JournalEntry e) {
    byte[] in = new byte[33];
    System.arraycopy(Blake3.hash(e.canonicalBytes()), 0, in, 1, 32);
    return Blake3.hash(in);
  }

  private static String seedHex(int first) {
    byte[] seed = new byte[32];
    for (int i = 0; i < seed.length; i++) {
      seed[i] = (byte) (first + i);
    }
    return Hex.encode(seed);
  }

  static ObjectNode receipt(String runId, int step, long idleUj) {
    Map<DeviceClass, ClassEnergy> energy = new EnumMap<>(DeviceClass.class);
    energy.put(
        DeviceClass.Cpu,
        new ClassEnergy(1_200_000L + step, Provenance.ModelBased, "rapl", 61, 1_000_000));
    energy.put(DeviceClass.Gpu, new ClassEnergy(300_000L, Provenance.Estimator, "estimator", 1, 1));
    return Receipt.builder()
        .runId(runId)
        .unit(UNIT)
        .grantsId(GRANTS)
        .tier("S2")
        .energy(energy)
        .idleUj(idleUj)
        .inference(List.of(new Receipt.InferenceUse(DeviceClass.Gpu, 300_000, 2)))
        .cpuTimeMs(9)
        .memoryPeakBytes(65_536)
        .wallMs(12)
        .io(new Receipt.IoUse(1, 26, 0))
        .net(new Receipt.NetUse(0, 0))
        .startedMs(T0 + 1_000L * step)
        .endedMs(T0 + 1_000L * step + 12)
        .build()
        .toCore();
  }

  static ObjectNode attestation(String receipt, String journalRoot) {
    return Attestation.builder()
        .host(new HostIdentity("vector-node", NODE.publicKey().hex(), "linux-x86_64"))
        .tier("S2")
        .grantsId(GRANTS)
        .receipt(receipt)
        .unit(UNIT)
        .journalRoot(journalRoot)
        .outcome(new Outcome.Completed())
        .clockGranted(false)
        .clockConstantMs(0L)
        .issuedMs(T0 + 15)
        .inputs(
            new Attestation.Inputs(
                List.of("unit.wasm", "--greet"),
                Attestation.Blob.of("stdin\n".getBytes(StandardCharsets.UTF_8))))
        .outputs(
            new Attestation.Outputs(
                Attestation.Blob.of("hello\n".getBytes(StandardCharsets.UTF_8)),
                Attestation.Blob.of(new byte[0])))
        .build()
        .toCore();
  }

  /** A journal of three entries: a denied-then-tainted shape exercising every field. */
  static List<JournalEntry> journal() {
    String emptyRequest = Blake3.hex("{}".getBytes(StandardCharsets.UTF_8));
    byte[] ok8 = {0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
    byte[] okEmpty = {0, 0, 0, 0};
    String readRequest =
        Blake3.hex("{\"offset\":0,\"path\":\"inbox/m1\"}".getBytes(StandardCharsets.UTF_8));
    return List.of(
        new JournalEntry(0, "random_u64", emptyRequest, Blake3.hex(ok8), "Allow", List.of()),
        new JournalEntry(
            1,
            "storage_read",
            readRequest,
            Blake3.hex(okEmpty),
            "Allow",
            List.of("storage:inbox/**")),
        new JournalEntry(
            2,
            "clock_now",
            emptyRequest,
            Blake3.hex(new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}),
            "Allow",
            List.of("storage:inbox/**")));
  }

  /** The fs-tree manifest of a fixed directory, made by the snapshot store itself. */
  static byte[] fsTree() {
    Path tmp = null;
    try {
      tmp = Files.createTempDirectory("interop-vectors");
      Path root = Files.createDirectories(tmp.resolve("root"));
      Files.createDirectories(root.resolve("data/empty"));
      Files.writeString(root.resolve("data/a.txt"), "alpha\n");
      Files.writeString(root.resolve("notes.md"), "# notes\n");
      SnapshotStore store = SnapshotStore.open(tmp.resolve("store"));
      try {
        String address = store.putTree(root);
        return store.blobs(address).get(address);
      } finally {
        store.close();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      delete(tmp);
    }
  }

  /** The instance-snapshot manifest of {@link #MODULE}'s fresh instance. */
  static byte[] instanceSnapshot() {
    Instance instance = Instance.builder(Parser.parse(MODULE)).build();
    return InstanceSnapshot.capture(instance, UNIT, null).manifest();
  }

  private static void delete(Path dir) {
    if (dir == null) {
      return;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  // ---- BLAKE3 tree proofs ----

  /** Leaf data d_i = BLAKE3(one byte i); roots, inclusion and consistency proofs for 1..64. */
  static ObjectNode merkle() {
    List<byte[]> data = new ArrayList<>();
    for (int i = 0; i < MAX_SIZE; i++) {
      data.add(Blake3.hash(new byte[] {(byte) i}));
    }
    MerkleTree tree = MerkleTree.blake3(data);
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put(
        "description",
        "RFC 9162 tree with BLAKE3-256 (docs/WIRE.md 1.1): leaf(d) = BLAKE3(0x00 || d), node(l, r) ="
            + " BLAKE3(0x01 || l || r), MTH of no leaves = BLAKE3(''). leaf data i is BLAKE3 of the"
            + " single byte i (32 bytes, as a node-log leaf's record address). roots[n] is the root"
            + " of the first n leaves; every inclusion proof (leaf_index < tree_size) and every"
            + " consistency proof (1 <= old_size <= new_size) up to size 64, paths deepest first.");
    ArrayNode d = o.putArray("leaf_data");
    data.forEach(x -> d.add(Hex.encode(x)));
    ArrayNode roots = o.putArray("roots");
    roots.add(Blake3.hex(new byte[0]));
    for (int n = 1; n <= MAX_SIZE; n++) {
      roots.add(Hex.encode(tree.root(n)));
    }
    ArrayNode inc = o.putArray("inclusion");
    for (int n = 1; n <= MAX_SIZE; n++) {
      for (int i = 0; i < n; i++) {
        inc.add(tree.inclusionProof(i, n).toJson());
      }
    }
    ArrayNode con = o.putArray("consistency");
    for (int n = 1; n <= MAX_SIZE; n++) {
      for (int m = 1; m <= n; m++) {
        con.add(tree.consistencyProof(m, n).toJson());
      }
    }
    return o;
  }
}
