package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Receipt.InferenceUse;
import io.sandboxd.attest.Receipt.IoUse;
import io.sandboxd.attest.Receipt.NetUse;
import io.sandboxd.attest.RunSegment.Kind;
import io.sandboxd.attest.RunSegment.SnapshotRef;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Receipt, Attestation and RunSegment cores (WIRE.md §2.3, §2.4, §2.6) and outcomes (Q6). */
class RecordsTest {
  private static final long MAX = CanonicalJson.MAX_SAFE_INTEGER;
  private static final String A64 = "a".repeat(64);
  private static final String B64 = "b".repeat(64);
  private static final String C64 = "c".repeat(64);
  private static final String D64 = "0123456789abcdef".repeat(4);

  // ================================================================ samples

  static Receipt sampleReceipt() {
    Map<DeviceClass, ClassEnergy> e = new LinkedHashMap<>();
    e.put(DeviceClass.Gpu, new ClassEnergy(300, Provenance.ModelBased, "nvml", 1000, 100_000_000));
    e.put(DeviceClass.Cpu, new ClassEnergy(1200, Provenance.HwShunt, "rapl", 1, 10_000_000));
    return new Receipt(
        "run-1",
        A64,
        B64,
        "S2",
        e,
        5,
        List.of(new InferenceUse(DeviceClass.Gpu, 100, 2)),
        10,
        4096,
        20,
        new IoUse(1, 2, 3),
        new NetUse(4, 5),
        1000,
        1020);
  }

  static Attestation sampleAttestation(Outcome outcome) {
    return Attestation.builder()
        .host(new HostIdentity("node-a", D64, "linux-x86_64"))
        .tier("S2")
        .grantsId(A64)
        .receipt(B64)
        .unit(C64)
        .journalRoot(D64)
        .outcome(outcome)
        .clockConstantMs(1_700_000_000_000L)
        .probingDetected(true)
        .issuedMs(1_700_000_000_500L)
        .build();
  }

  static SnapshotRef sampleSnapshot() {
    return new SnapshotRef(A64, null, B64, C64, List.of("storage:inbox/**", "kv:75"), D64);
  }

  static RunSegment sampleSegment() {
    return new RunSegment(
        "run-1",
        2,
        Kind.resume,
        A64,
        "node-b",
        D64,
        "S2",
        C64,
        null,
        sampleSnapshot(),
        42_000,
        Provenance.Estimator,
        1234);
  }

  // ================================================================ arbitraries

  private static long u53(Seeded g) {
    return g.longBetween(0, MAX);
  }

  private static final char[][] TEXT_CHARS = {
    {' ', '~'}, {'\u0000', '\u001f'}, {'\u00a0', '\u07ff'}, {'\u4e00', '\u4e20'}
  };

  private static String text(Seeded g) {
    return g.string(24, TEXT_CHARS);
  }

  private static String hex64(Seeded g) {
    return g.string(64, 64, "0123456789abcdef");
  }

  private static String tiers(Seeded g) {
    return g.pick("S0", "S1", "S2", "S3", "S4", "S5", "S6");
  }

  private static ClassEnergy classEnergy(Seeded g) {
    return new ClassEnergy(
        g.longBetween(0, MAX / 8),
        g.pick(Provenance.values()),
        g.pick("rapl", "nvml", "model", "shunt"),
        u53(g),
        u53(g));
  }

  /** Cpu and any subset of the accelerator classes. */
  private static Map<DeviceClass, ClassEnergy> energies(Seeded g) {
    List<DeviceClass> accelerators =
        List.of(DeviceClass.values()).subList(1, DeviceClass.values().length);
    Map<DeviceClass, ClassEnergy> m = new LinkedHashMap<>();
    for (DeviceClass c : accelerators) {
      if (g.bool()) {
        m.put(c, classEnergy(g));
      }
    }
    m.put(DeviceClass.Cpu, classEnergy(g));
    return m;
  }

  static Receipt receipts(Seeded g) {
    List<InferenceUse> inf =
        g.list(0, 4, () -> new InferenceUse(g.pick(List.of(DeviceClass.values())), u53(g), u53(g)));
    return new Receipt(
        text(g),
        hex64(g),
        hex64(g),
        tiers(g),
        energies(g),
        u53(g),
        inf,
        u53(g),
        u53(g),
        u53(g),
        new IoUse(u53(g), u53(g), u53(g)),
        new NetUse(u53(g), u53(g)),
        u53(g),
        u53(g));
  }

  static Outcome outcomes(Seeded g) {
    return switch (g.random().nextInt(4)) {
      case 0 -> new Outcome.Completed();
      case 1 -> new Outcome.Terminated(g.pick(Outcome.Breach.values()));
      case 2 -> new Outcome.Declined(text(g));
      default -> new Outcome.Failed(text(g));
    };
  }

  static Attestation attestations(Seeded g) {
    HostIdentity host = new HostIdentity(text(g), hex64(g), text(g));
    String tee = g.orNull(0.5, () -> g.string(0, 40, "0123456789abcdef"));
    return Attestation.builder()
        .host(host)
        .tier(tiers(g))
        .grantsId(hex64(g))
        .receipt(hex64(g))
        .unit(hex64(g))
        .manifest(g.orNull(0.3, () -> hex64(g)))
        .journalRoot(g.orNull(0.3, () -> hex64(g)))
        .outcome(outcomes(g))
        .clockGranted(g.bool())
        .clockConstantMs(g.orNull(0.3, () -> u53(g)))
        .probingDetected(g.bool())
        .tamperingDetected(g.bool())
        .teeReport(tee)
        .issuedMs(u53(g))
        .build();
  }

  static RunSegment segments(Seeded g) {
    SnapshotRef snap =
        g.orNull(
            0.4,
            () ->
                new SnapshotRef(
                    hex64(g),
                    g.orNull(0.4, () -> hex64(g)),
                    hex64(g),
                    hex64(g),
                    g.list(0, 5, () -> text(g)),
                    hex64(g)));
    return new RunSegment(
        text(g),
        u53(g),
        g.pick(Kind.values()),
        g.orNull(0.3, () -> hex64(g)),
        text(g),
        hex64(g),
        tiers(g),
        hex64(g),
        g.orNull(0.4, () -> hex64(g)),
        snap,
        u53(g),
        g.pick(Provenance.values()),
        u53(g));
  }

  /** Through the bytes: canonicalize the core, parse strictly, read back. */
  private static JsonNode viaBytes(JsonNode core) {
    return CanonicalJson.parse(CanonicalJson.canonicalize(core));
  }

  /**
   * Reads {@code record}'s core back, directly and through its canonical bytes, and asserts both
   * are the record and that it encodes again to the same bytes; returns the core.
   */
  private static <T> ObjectNode roundTrips(
      T record, Function<T, ObjectNode> toCore, Function<JsonNode, T> fromCore) {
    ObjectNode core = toCore.apply(record);
    assertEquals(record, fromCore.apply(core));
    T back = fromCore.apply(viaBytes(core));
    assertEquals(record, back);
    assertArrayEquals(
        CanonicalJson.canonicalize(core), CanonicalJson.canonicalize(toCore.apply(back)));
    return core;
  }

  // ================================================================ round trips

  @Test
  void receiptRoundTrips() {
    Seeded.repeat(
        300,
        g -> {
          Receipt r = receipts(g);
          ObjectNode core = roundTrips(r, Receipt::toCore, Receipt::fromCore);
          // Derived fields are what the spec says they are.
          long sum = r.energy().values().stream().mapToLong(ClassEnergy::uj).sum();
          assertEquals(sum, core.get("total_uj").longValue());
          Provenance worst =
              r.energy().values().stream()
                  .map(ClassEnergy::provenance)
                  .max(Enum::compareTo)
                  .orElseThrow();
          assertEquals(worst.name(), core.get("energy_provenance").textValue());
          // One key per class in all three class maps.
          Set<String> keys = new TreeSet<>();
          r.energy().keySet().forEach(k -> keys.add(k.jsonName()));
          assertEquals(keys, fieldNames(core.get("energy_uj")));
          assertEquals(keys, fieldNames(core.get("provenance")));
          assertEquals(keys, fieldNames(core.get("meter")));
        });
  }

  @Test
  void attestationRoundTrips() {
    Seeded.repeat(
        300, g -> roundTrips(attestations(g), Attestation::toCore, Attestation::fromCore));
  }

  @Test
  void runSegmentRoundTrips() {
    Seeded.repeat(300, g -> roundTrips(segments(g), RunSegment::toCore, RunSegment::fromCore));
  }

  @Test
  void signedRecordsVerifyAndReadBack() {
    Seeded.repeat(
        50,
        g -> {
          Receipt r = receipts(g);
          Attestation a = attestations(g);
          SigningKey key = EnvelopeTest.seeded(9);
          Envelope er =
              Envelope.fromJson(CanonicalJson.parse(Envelope.sign(r.toCore(), key).toJsonLine()));
          Envelope ea =
              Envelope.fromJson(CanonicalJson.parse(Envelope.sign(a.toCore(), key).toJsonLine()));
          assertTrue(er.verify(Optional.of(key.publicKey())).isValid());
          assertTrue(ea.verify(Optional.of(key.publicKey())).isValid());
          assertEquals(r, Receipt.fromCore(er.core()));
          assertEquals(a, Attestation.fromCore(ea.core()));
          assertEquals(Optional.of(Receipt.SCHEMA), er.schema());
        });
  }

  private static Set<String> fieldNames(JsonNode n) {
    Set<String> s = new TreeSet<>();
    n.fieldNames().forEachRemaining(s::add);
    return s;
  }

  // ================================================================ exact shapes

  @Test
  void receiptCanonicalBytesAreExactlyTheWireShape() {
    Receipt r =
        new Receipt(
            "r",
            A64,
            B64,
            "S2",
            Map.of(DeviceClass.Cpu, new ClassEnergy(7, Provenance.HwShunt, "rapl", 1, 10_000_000)),
            0,
            List.of(),
            1,
            2,
            3,
            new IoUse(4, 5, 6),
            new NetUse(7, 8),
            9,
            12);
    String expected =
        "{\"cpu_time_ms\":1,\"ended_ms\":12,\"energy_provenance\":\"HwShunt\","
            + "\"energy_uj\":{\"Cpu\":7},\"grants_id\":\""
            + B64
            + "\",\"idle_uj\":0,\"inference\":[],"
            + "\"io\":{\"read_bytes\":5,\"read_ops\":4,\"write_bytes\":6},"
            + "\"memory_peak_bytes\":2,"
            + "\"meter\":{\"Cpu\":{\"min_window_ns\":10000000,\"resolution_uj\":1,\"source\":\"rapl\"}},"
            + "\"net\":{\"egress_bytes\":7,\"ingress_bytes\":8},"
            + "\"provenance\":{\"Cpu\":\"HwShunt\"},\"run_id\":\"r\",\"schema\":\"sandbox.receipt/1\","
            + "\"started_ms\":9,\"tier\":\"S2\",\"total_uj\":7,\"unit\":\""
            + A64
            + "\",\"wall_ms\":3}";
    assertEquals(expected, CanonicalJson.canonicalString(r.toCore()));
  }

  @Test
  void receiptDerivesTotalAndWorstProvenance() {
    Receipt r = sampleReceipt();
    assertEquals(1500, r.totalUj());
    assertEquals(Provenance.ModelBased, r.energyProvenance());
    ObjectNode core = r.toCore();
    assertEquals(1500, core.get("total_uj").longValue());
    assertEquals("ModelBased", core.get("energy_provenance").textValue());
    assertEquals(
        "{\"calls\":2,\"class\":\"Gpu\",\"uj\":100}",
        CanonicalJson.canonicalString(core.get("inference").get(0)));
  }

  @Test
  void attestationCoreHasExactlyTheWireKeys() {
    ObjectNode core = sampleAttestation(new Outcome.Completed()).toCore();
    assertEquals(
        new TreeSet<>(
            List.of(
                "schema",
                "host",
                "tier",
                "grants_id",
                "receipt",
                "unit",
                "manifest",
                "journal_root",
                "outcome",
                "clock",
                "probing_detected",
                "tampering_detected",
                "tee_report",
                "issued_ms")),
        fieldNames(core));
    assertEquals("sandbox.attestation/1", core.get("schema").textValue());
    assertTrue(core.get("manifest").isNull(), "null manifest is written as null");
    assertTrue(core.get("tee_report").isNull());
    assertEquals(
        "{\"constant_ms\":1700000000000,\"granted\":false}",
        CanonicalJson.canonicalString(core.get("clock")));
    assertEquals(
        "{\"id\":\"node-a\",\"platform\":\"linux-x86_64\",\"public_key\":\"" + D64 + "\"}",
        CanonicalJson.canonicalString(core.get("host")));
  }

  @Test
  void segmentCoreHasExactlyTheWireKeys() {
    ObjectNode core = sampleSegment().toCore();
    assertEquals(
        new TreeSet<>(
            List.of(
                "schema",
                "run_id",
                "seq",
                "kind",
                "prev",
                "host",
                "tier",
                "grants_id",
                "receipt",
                "snapshot",
                "idle_uj",
                "idle_provenance",
                "at_ms")),
        fieldNames(core));
    assertEquals("resume", core.get("kind").textValue());
    assertTrue(core.get("receipt").isNull());
    assertEquals(
        "{\"fs\":\""
            + A64
            + "\",\"grants_id\":\""
            + C64
            + "\",\"journal_root\":\""
            + D64
            + "\",\"manifest\":\""
            + B64
            + "\",\"memory\":null,"
            + "\"taint\":[\"kv:75\",\"storage:inbox/**\"]}",
        CanonicalJson.canonicalString(core.get("snapshot")));
  }

  @Test
  void snapshotTaintIsASortedDeduplicatedSet() {
    SnapshotRef s = new SnapshotRef(A64, null, B64, C64, List.of("b", "a", "b", "B"), D64);
    assertEquals(List.of("B", "a", "b"), s.taint());
  }

  @Test
  void provenanceWorstIsTheWorseOfTwo() {
    for (Provenance a : Provenance.values()) {
      for (Provenance b : Provenance.values()) {
        Provenance w = a.worst(b);
        assertEquals(a.compareTo(b) >= 0 ? a : b, w);
        assertEquals(w, b.worst(a));
      }
    }
    assertEquals(Provenance.Estimator, Provenance.HwShunt.worst(Provenance.Estimator));
  }

  // ================================================================ outcomes (Q6)

  private static String spelled(Outcome o) {
    return CanonicalJson.canonicalString(o.toJson());
  }

  @Test
  void outcomeSpellingsAreExactlyQ6() {
    assertEquals("\"Completed\"", spelled(new Outcome.Completed()));
    assertEquals(
        "{\"Terminated\":{\"breach\":\"EnergyBudget\"}}",
        spelled(new Outcome.Terminated(Outcome.Breach.EnergyBudget)));
    assertEquals(
        "{\"Terminated\":{\"breach\":\"CpuTime\"}}",
        spelled(new Outcome.Terminated(Outcome.Breach.CpuTime)));
    assertEquals(
        "{\"Terminated\":{\"breach\":\"Memory\"}}",
        spelled(new Outcome.Terminated(Outcome.Breach.Memory)));
    assertEquals(
        "{\"Declined\":{\"reason\":\"floor S5 above S2\"}}",
        spelled(new Outcome.Declined("floor S5 above S2")));
    assertEquals(
        "{\"Failed\":{\"reason\":\"wasm trap: unreachable\"}}",
        spelled(new Outcome.Failed("wasm trap: unreachable")));
  }

  @Test
  void outcomeIsEmbeddedVerbatimInTheAttestation() {
    String core =
        CanonicalJson.canonicalString(
            sampleAttestation(new Outcome.Terminated(Outcome.Breach.CpuTime)).toCore());
    assertTrue(core.contains("\"outcome\":{\"Terminated\":{\"breach\":\"CpuTime\"}}"), core);
    String done =
        CanonicalJson.canonicalString(sampleAttestation(new Outcome.Completed()).toCore());
    assertTrue(done.contains("\"outcome\":\"Completed\""), done);
  }

  @Test
  void outcomeJsonRoundTrips() {
    Seeded.repeat(
        200,
        g -> {
          Outcome o = outcomes(g);
          assertEquals(o, Outcome.fromJson(viaBytes(o.toJson()), "o"));
        });
  }

  @Test
  void outcomeSummaries() {
    assertEquals("Completed", new Outcome.Completed().summary());
    assertEquals("Terminated(Memory)", new Outcome.Terminated(Outcome.Breach.Memory).summary());
    assertEquals("Declined: x", new Outcome.Declined("x").summary());
    assertEquals("Failed: y", new Outcome.Failed("y").summary());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "\"completed\"",
        "\"Terminated\"",
        "\"CpuTime\"",
        "{\"Completed\":{}}",
        "{\"Terminated\":{\"breach\":\"Disk\"}}",
        "{\"Terminated\":{\"breach\":\"cputime\"}}",
        "{\"Terminated\":{}}",
        "{\"Terminated\":{\"breach\":\"CpuTime\",\"extra\":1}}",
        "{\"Terminated\":\"CpuTime\"}",
        "{\"Declined\":{\"reason\":5}}",
        "{\"Declined\":\"no\"}",
        "{\"Failed\":{}}",
        "{\"Failed\":{\"reason\":\"x\"},\"Declined\":{\"reason\":\"y\"}}",
        "{}",
        "{\"Exploded\":{\"reason\":\"x\"}}",
        "null",
        "1",
        "[\"Completed\"]"
      })
  void badOutcomesAreRefusedNamingThePath(String json) {
    AttestException e =
        assertThrows(
            AttestException.class,
            () -> Outcome.fromJson(CanonicalJson.parse(json), "attestation.outcome"));
    assertTrue(e.getMessage().startsWith("attestation.outcome"), e.getMessage());
  }

  @Test
  void outcomeRefusalsNameTheFieldAtFault() {
    assertEquals(
        "attestation.outcome.Terminated.breach: unknown breach \"Disk\"",
        outcomeRefusal("{\"Terminated\":{\"breach\":\"Disk\"}}"));
    assertEquals(
        "attestation.outcome.Declined.why: unknown field",
        outcomeRefusal("{\"Declined\":{\"why\":\"x\"}}"));
    assertEquals("attestation.outcome.Failed.reason: missing", outcomeRefusal("{\"Failed\":{}}"));
  }

  private static String outcomeRefusal(String json) {
    return assertThrows(
            AttestException.class,
            () -> Outcome.fromJson(CanonicalJson.parse(json), "attestation.outcome"))
        .getMessage();
  }

  // ================================================================ refusals: helpers

  private static <T> String refusal(
      Function<JsonNode, T> reader, ObjectNode core, Consumer<ObjectNode> change) {
    return Refusal.of(reader, core, change);
  }

  private static String receiptRefusal(Consumer<ObjectNode> change) {
    return refusal(Receipt::fromCore, sampleReceipt().toCore(), change);
  }

  private static String attestationRefusal(Consumer<ObjectNode> change) {
    return refusal(
        Attestation::fromCore, sampleAttestation(new Outcome.Completed()).toCore(), change);
  }

  private static String segmentRefusal(Consumer<ObjectNode> change) {
    return refusal(RunSegment::fromCore, sampleSegment().toCore(), change);
  }

  private static ObjectNode obj(JsonNode n, String field) {
    return (ObjectNode) n.get(field);
  }

  private static void assertStarts(String prefix, String message) {
    assertTrue(message.startsWith(prefix), "expected '" + prefix + "...', got: " + message);
  }

  // ================================================================ receipt refusals

  @Test
  void receiptSamplesAreAcceptedUnchanged() {
    // Guard for the refusal tests below: the unmodified sample reads back.
    assertEquals(sampleReceipt(), Receipt.fromCore(sampleReceipt().toCore()));
  }

  @Test
  void receiptRefusesUnknownFieldsAtEveryLevel() {
    assertEquals("receipt.extra: unknown field", receiptRefusal(c -> c.put("extra", 1)));
    assertEquals(
        "receipt.io.extra: unknown field", receiptRefusal(c -> obj(c, "io").put("extra", 1)));
    assertEquals(
        "receipt.net.extra: unknown field", receiptRefusal(c -> obj(c, "net").put("extra", 1)));
    assertEquals(
        "receipt.meter.Cpu.extra: unknown field",
        receiptRefusal(c -> obj(obj(c, "meter"), "Cpu").put("extra", 1)));
    assertEquals(
        "receipt.inference[0].extra: unknown field",
        receiptRefusal(c -> ((ObjectNode) c.get("inference").get(0)).put("extra", 1)));
  }

  @Test
  void receiptRefusesAWrongOrMissingSchema() {
    assertEquals(
        "receipt.schema: expected \"sandbox.receipt/1\", got \"sandbox.receipt/2\"",
        receiptRefusal(c -> c.put("schema", "sandbox.receipt/2")));
    assertStarts("receipt.schema:", receiptRefusal(c -> c.put("schema", Attestation.SCHEMA)));
    assertEquals("receipt.schema: missing", receiptRefusal(c -> c.remove("schema")));
    assertEquals(
        "receipt.schema: expected a string, got a number", receiptRefusal(c -> c.put("schema", 1)));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "cpu_time_ms",
        "memory_peak_bytes",
        "wall_ms",
        "idle_uj",
        "started_ms",
        "ended_ms",
        "total_uj"
      })
  void receiptRefusesNegativeFloatOversizedAndStringNumbers(String field) {
    assertStarts("receipt." + field + ":", receiptRefusal(c -> c.put(field, -1)));
    assertStarts("receipt." + field + ":", receiptRefusal(c -> c.put(field, 1.5)));
    assertStarts("receipt." + field + ":", receiptRefusal(c -> c.put(field, 10.0)));
    assertStarts("receipt." + field + ":", receiptRefusal(c -> c.put(field, MAX + 1)));
    assertStarts("receipt." + field + ":", receiptRefusal(c -> c.put(field, "10")));
    assertStarts("receipt." + field + ":", receiptRefusal(c -> c.putNull(field)));
  }

  @Test
  void receiptRefusesBadNumbersInsideNestedObjects() {
    assertStarts("receipt.energy_uj.Cpu:", receiptRefusal(c -> obj(c, "energy_uj").put("Cpu", -5)));
    assertStarts(
        "receipt.energy_uj.Gpu:", receiptRefusal(c -> obj(c, "energy_uj").put("Gpu", 0.5)));
    assertStarts("receipt.io.read_ops:", receiptRefusal(c -> obj(c, "io").put("read_ops", -1)));
    assertStarts(
        "receipt.net.egress_bytes:", receiptRefusal(c -> obj(c, "net").put("egress_bytes", 2.5)));
    assertStarts(
        "receipt.meter.Cpu.resolution_uj:",
        receiptRefusal(c -> obj(obj(c, "meter"), "Cpu").put("resolution_uj", -1)));
    assertStarts(
        "receipt.inference[0].uj:",
        receiptRefusal(c -> ((ObjectNode) c.get("inference").get(0)).put("uj", 1.25)));
  }

  @Test
  void receiptRefusesATotalThatIsNotTheSum() {
    assertEquals(
        "receipt.total_uj: does not equal the sum of energy_uj",
        receiptRefusal(c -> c.put("total_uj", 1501)));
    assertStarts("receipt.total_uj", receiptRefusal(c -> c.put("total_uj", 1200)));
    assertStarts("receipt.total_uj", receiptRefusal(c -> c.put("total_uj", 0)));
    // Changing one class without the total is caught too.
    assertStarts("receipt.total_uj", receiptRefusal(c -> obj(c, "energy_uj").put("Gpu", 301)));
  }

  @ParameterizedTest
  @ValueSource(strings = {"HwShunt", "Estimator"})
  void receiptRefusesAnEnergyProvenanceThatIsNotTheWorst(String claimed) {
    // The sample's worst is ModelBased (Gpu); claiming better or worse is refused.
    assertEquals(
        "receipt.energy_provenance: is not the worst of provenance",
        receiptRefusal(c -> c.put("energy_provenance", claimed)));
  }

  @Test
  void receiptRefusesUnknownProvenanceSpellings() {
    assertEquals(
        "receipt.provenance.Cpu: unknown provenance \"hwshunt\"",
        receiptRefusal(c -> obj(c, "provenance").put("Cpu", "hwshunt")));
    assertStarts(
        "receipt.energy_provenance", receiptRefusal(c -> c.put("energy_provenance", "Best")));
  }

  @Test
  void receiptRefusesAMissingCpu() {
    String m =
        receiptRefusal(
            c -> {
              obj(c, "energy_uj").remove("Cpu");
              obj(c, "provenance").remove("Cpu");
              obj(c, "meter").remove("Cpu");
              c.put("total_uj", 300);
            });
    assertTrue(m.contains("Cpu"), m);
    Map<DeviceClass, ClassEnergy> gpuOnly =
        Map.of(DeviceClass.Gpu, new ClassEnergy(1, Provenance.HwShunt, "nvml", 1, 1));
    AttestException e =
        assertThrows(
            AttestException.class,
            () ->
                new Receipt(
                    "r",
                    A64,
                    B64,
                    "S2",
                    gpuOnly,
                    0,
                    List.of(),
                    0,
                    0,
                    0,
                    IoUse.NONE,
                    NetUse.NONE,
                    0,
                    0));
    assertTrue(e.getMessage().contains("Cpu"), e.getMessage());
  }

  @Test
  void receiptRefusesClassMapsWithDifferentKeys() {
    assertStarts("receipt", receiptRefusal(c -> obj(c, "provenance").put("Npu", "HwShunt")));
    assertStarts(
        "receipt.provenance.Gpu: missing", receiptRefusal(c -> obj(c, "provenance").remove("Gpu")));
    assertStarts("receipt.meter.Gpu: missing", receiptRefusal(c -> obj(c, "meter").remove("Gpu")));
    assertEquals(
        "receipt: energy_uj, provenance and meter must have the same keys",
        receiptRefusal(
            c -> {
              obj(c, "provenance").put("Npu", "HwShunt");
              obj(c, "meter")
                  .putObject("Npu")
                  .put("source", "x")
                  .put("resolution_uj", 1)
                  .put("min_window_ns", 1);
            }));
  }

  @Test
  void receiptRefusesUnknownDeviceClasses() {
    assertEquals(
        "receipt.energy_uj: unknown device class \"Fpga\"",
        receiptRefusal(c -> obj(c, "energy_uj").put("Fpga", 1)));
    assertEquals(
        "receipt.energy_uj: unknown device class \"gpu\"",
        receiptRefusal(c -> obj(c, "energy_uj").put("gpu", 1)));
    assertEquals(
        "receipt.inference[0].class: unknown device class \"Fpga\"",
        receiptRefusal(c -> ((ObjectNode) c.get("inference").get(0)).put("class", "Fpga")));
  }

  @Test
  void receiptRefusesBadHexAndShapes() {
    assertStarts("receipt.unit:", receiptRefusal(c -> c.put("unit", A64.toUpperCase(Locale.ROOT))));
    assertStarts("receipt.grants_id:", receiptRefusal(c -> c.put("grants_id", B64.substring(1))));
    assertStarts(
        "receipt.grants_id:",
        receiptRefusal(c -> c.put("grants_id", "blake3:" + B64.substring(7))));
    assertEquals(
        "receipt.inference: expected an array", receiptRefusal(c -> c.putObject("inference")));
    assertEquals(
        "receipt.io: expected an object, got an array", receiptRefusal(c -> c.putArray("io")));
    assertEquals("receipt.ended_ms: missing", receiptRefusal(c -> c.remove("ended_ms")));
    assertEquals(
        "receipt.run_id: expected a string, got a number", receiptRefusal(c -> c.put("run_id", 7)));
    assertEquals(
        "receipt: expected an object, got an array",
        assertThrows(
                AttestException.class, () -> Receipt.fromCore(JsonNodeFactory.instance.arrayNode()))
            .getMessage());
  }

  // ================================================================ attestation refusals

  @Test
  void attestationSamplesAreAcceptedUnchanged() {
    Attestation a = sampleAttestation(new Outcome.Failed("trap"));
    assertEquals(a, Attestation.fromCore(a.toCore()));
    Attestation back = Attestation.fromCore(sampleAttestation(new Outcome.Completed()).toCore());
    assertNull(back.manifest());
    assertNull(back.teeReport());
    assertEquals(D64, back.journalRoot());
  }

  @Test
  void attestationRefusesUnknownFieldsAtEveryLevel() {
    assertEquals("attestation.extra: unknown field", attestationRefusal(c -> c.put("extra", 1)));
    assertEquals(
        "attestation.host.extra: unknown field",
        attestationRefusal(c -> obj(c, "host").put("extra", 1)));
    assertEquals(
        "attestation.clock.extra: unknown field",
        attestationRefusal(c -> obj(c, "clock").put("extra", 1)));
    assertEquals(
        "attestation.outcome.Failed.extra: unknown field",
        refusal(
            Attestation::fromCore,
            sampleAttestation(new Outcome.Failed("x")).toCore(),
            c -> obj(obj(c, "outcome"), "Failed").put("extra", 1)));
  }

  @Test
  void attestationRefusesWrongSchema() {
    assertStarts(
        "attestation.schema: expected \"sandbox.attestation/1\"",
        attestationRefusal(c -> c.put("schema", Receipt.SCHEMA)));
    assertEquals("attestation.schema: missing", attestationRefusal(c -> c.remove("schema")));
  }

  @Test
  void attestationRefusesBadNumbers() {
    assertStarts("attestation.issued_ms:", attestationRefusal(c -> c.put("issued_ms", -1)));
    assertStarts("attestation.issued_ms:", attestationRefusal(c -> c.put("issued_ms", 3.5)));
    assertStarts(
        "attestation.clock.constant_ms:",
        attestationRefusal(c -> obj(c, "clock").put("constant_ms", -10)));
    assertStarts(
        "attestation.clock.constant_ms:",
        attestationRefusal(c -> obj(c, "clock").put("constant_ms", 0.1)));
  }

  @Test
  void attestationRefusesBadHexAndTypes() {
    assertStarts("attestation.manifest:", attestationRefusal(c -> c.put("manifest", "ABC")));
    assertStarts(
        "attestation.journal_root:", attestationRefusal(c -> c.put("journal_root", D64 + "00")));
    assertStarts(
        "attestation.host.public_key:",
        attestationRefusal(c -> obj(c, "host").put("public_key", D64.toUpperCase(Locale.ROOT))));
    assertStarts("attestation.receipt:", attestationRefusal(c -> c.putNull("receipt")));
    assertEquals(
        "attestation.probing_detected: expected a boolean, got a string",
        attestationRefusal(c -> c.put("probing_detected", "true")));
    assertStarts("attestation.outcome", attestationRefusal(c -> c.put("outcome", "Terminated")));
    assertStarts(
        "attestation.outcome",
        attestationRefusal(
            c -> c.putObject("outcome").putObject("Terminated").put("breach", "Io")));
  }

  // ================================================================ segment refusals

  @Test
  void segmentSampleIsAcceptedUnchanged() {
    assertEquals(sampleSegment(), RunSegment.fromCore(sampleSegment().toCore()));
  }

  @Test
  void segmentRefusesUnknownFieldsAtEveryLevel() {
    assertEquals("segment.extra: unknown field", segmentRefusal(c -> c.put("extra", 1)));
    assertEquals(
        "segment.host.platform: unknown field",
        segmentRefusal(c -> obj(c, "host").put("platform", "linux")));
    assertEquals(
        "segment.snapshot.extra: unknown field",
        segmentRefusal(c -> obj(c, "snapshot").put("extra", 1)));
  }

  @Test
  void segmentRefusesWrongSchemaKindAndNumbers() {
    assertStarts("segment.schema:", segmentRefusal(c -> c.put("schema", "sandbox.run-segment/2")));
    assertEquals(
        "segment.kind: unknown segment kind \"Execute\"",
        segmentRefusal(c -> c.put("kind", "Execute")));
    assertStarts("segment.seq:", segmentRefusal(c -> c.put("seq", -1)));
    assertStarts("segment.seq:", segmentRefusal(c -> c.put("seq", 1.0)));
    assertStarts("segment.idle_uj:", segmentRefusal(c -> c.put("idle_uj", -3)));
    assertStarts("segment.at_ms:", segmentRefusal(c -> c.put("at_ms", MAX + 1)));
    assertEquals(
        "segment.idle_provenance: unknown provenance \"Measured\"",
        segmentRefusal(c -> c.put("idle_provenance", "Measured")));
  }

  @Test
  void segmentRefusesBadHexAndSnapshotShapes() {
    assertStarts("segment.prev:", segmentRefusal(c -> c.put("prev", A64.toUpperCase(Locale.ROOT))));
    assertStarts("segment.snapshot.fs:", segmentRefusal(c -> obj(c, "snapshot").put("fs", "00")));
    assertStarts(
        "segment.snapshot.memory:", segmentRefusal(c -> obj(c, "snapshot").put("memory", "xyz")));
    assertEquals(
        "segment.snapshot.taint[2]: expected a string",
        segmentRefusal(c -> ((ArrayNode) c.get("snapshot").get("taint")).add(5)));
    assertEquals(
        "segment.snapshot.taint: expected an array",
        segmentRefusal(c -> obj(c, "snapshot").put("taint", "kv:75")));
    assertEquals(
        "segment.snapshot: expected an object, got a string",
        segmentRefusal(c -> c.put("snapshot", "x")));
  }

  @ParameterizedTest
  @EnumSource(Kind.class)
  void kindsRoundTripByName(Kind k) {
    RunSegment s = sampleSegment();
    RunSegment withKind =
        new RunSegment(
            s.runId(),
            s.seq(),
            k,
            s.prev(),
            s.hostId(),
            s.hostPublicKey(),
            s.tier(),
            s.grantsId(),
            s.receipt(),
            s.snapshot(),
            s.idleUj(),
            s.idleProvenance(),
            s.atMs());
    ObjectNode core = withKind.toCore();
    assertEquals(k.name(), core.get("kind").textValue());
    assertEquals(k, RunSegment.fromCore(core).kind());
  }

  @Test
  void kindOrderIsExactlyTheSpecTable() {
    Set<String> allowed = new HashSet<>();
    for (Kind prev : Kind.values()) {
      for (Kind next : Kind.values()) {
        if (next.mayFollow(prev)) {
          allowed.add(prev + "->" + next);
        }
      }
    }
    assertEquals(
        Set.of("execute->suspend", "execute->execute", "suspend->resume", "resume->execute"),
        allowed);
  }

  @Test
  void verificationVariants() {
    assertTrue(new Verification.Valid().isValid());
    Verification inv = new Verification.Invalid("why");
    assertEquals("why", assertInstanceOf(Verification.Invalid.class, inv).reason());
    assertFalse(inv.isValid());
  }
}
