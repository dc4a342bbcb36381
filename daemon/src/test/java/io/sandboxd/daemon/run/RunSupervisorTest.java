package io.sandboxd.daemon.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SegmentChain;
import io.sandboxd.attest.Verification;
import io.sandboxd.daemon.store.RecordKind;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.executor.EnergyModel;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.Journal;
import io.sandboxd.executor.JournalEntry;
import io.sandboxd.executor.UnitCompiler;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class RunSupervisorTest extends NodeStoreFixture {
  /** Logs, reads the clock twice and draws a random number: three journaled host calls. */
  static final String UNIT =
      """
      (module
        (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
        (import "sandbox" "clock_now" (func $clock (param i32) (result i32)))
        (import "sandbox" "random_u64" (func $random (param i32) (result i32)))
        (memory (export "memory") 1 2)
        (data (i32.const 0) "supervised hello")
        (func (export "run") (result i32)
          (if (i32.ne (call $log (i32.const 0) (i32.const 16)) (i32.const 0))
            (then (return (i32.const 1))))
          (drop (call $clock (i32.const 64)))
          (drop (call $clock (i32.const 72)))
          (drop (call $random (i32.const 80)))
          (i32.const 0)))
      """;

  @RegisterExtension static final TestExecutor executor = new TestExecutor(2, 60_000);
  static final byte[] module = Wat2Wasm.parse(UNIT);

  RunSupervisor supervisor;

  @BeforeEach
  void wire() throws Exception {
    supervisor =
        new RunSupervisor(
            new Admission(new UnitCompiler(16), Set.of(DeviceClass.Cpu)),
            executor.get(),
            store,
            node,
            tmp.resolve("storage"));
  }

  static String grants(String devices, String host) {
    return "{\"compute\":{\"devices\":"
        + devices
        + ",\"energy_budget_uj\":1000000000,\"cpu_time_ms\":5000,\"memory_bytes\":1048576},"
        + "\"storage\":{\"read\":[],\"write\":[],\"delete\":[]},"
        + "\"network\":{\"outbound\":[],\"inbound\":false},"
        + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
        + "\"host\":"
        + host
        + "}";
  }

  static final String ALL_HOST =
      "{\"logging\":true,\"clock\":true,\"random\":true,\"inference\":false}";

  private PublicKey nodeKey() {
    return node.key().publicKey();
  }

  private void assertSigned(Envelope e, String what) {
    assertInstanceOf(Verification.Valid.class, e.verify(Optional.of(nodeKey())), what);
  }

  @Test
  void inferenceEnergyGoesToTheServingClassAndIsListedWithItsCalls() throws Exception {
    com.sun.net.httpserver.HttpServer server =
        com.sun.net.httpserver.HttpServer.create(new java.net.InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/",
        ex -> {
          byte[] body = "{}".getBytes(java.nio.charset.StandardCharsets.UTF_8);
          ex.sendResponseHeaders(200, body.length);
          ex.getResponseBody().write(body);
          ex.close();
        });
    server.start();
    // The serving class's counter advances 700 µJ between the two readings of each call.
    java.util.concurrent.atomic.AtomicLong counter = new java.util.concurrent.atomic.AtomicLong();
    io.sandboxd.executor.HostServices services =
        io.sandboxd.executor.HostServices.none()
            .withInference(
                java.net.URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/"),
                DeviceClass.Cpu)
            .withInferenceMeter(() -> counter.getAndAdd(700));
    String wat =
        """
        (module
          (import "sandbox" "infer" (func $infer (param i32 i32 i32 i32 i32) (result i32)))
          (memory 1)
          (data (i32.const 0) "{}")
          (func (export "run") (result i32)
            (drop (call $infer (i32.const 0) (i32.const 2) (i32.const 100) (i32.const 100) (i32.const 96)))
            (call $infer (i32.const 0) (i32.const 2) (i32.const 100) (i32.const 100) (i32.const 96))))
        """;
    try (Executor withModel = new Executor(1, EnergyModel.estimate(10_000), 60_000, services)) {
      RunSupervisor s =
          new RunSupervisor(
              new Admission(new UnitCompiler(4), Set.of(DeviceClass.Cpu)),
              withModel,
              store,
              node,
              tmp.resolve("storage"));
      RunRecord r =
          s.submit(
              Wat2Wasm.parse(wat),
              grants(
                  "[]", "{\"logging\":false,\"clock\":false,\"random\":false,\"inference\":true}"),
              "run");
      assertEquals("\"Completed\"", r.outcomeJson());
      Receipt receipt = Receipt.fromCore(r.receipt().core());
      assertEquals(
          java.util.List.of(new Receipt.InferenceUse(DeviceClass.Cpu, 1400, 2)),
          receipt.inference());
      assertTrue(
          receipt.energy().get(DeviceClass.Cpu).uj() >= 1400,
          "inference energy is in Cpu's figure");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void completedRunIsSignedLinkedAndStored() {
    String g = grants("[]", ALL_HOST);
    RunRecord r = supervisor.submit(module, g, "run");

    assertSigned(r.receipt(), "receipt");
    assertSigned(r.attestation(), "attestation");
    assertSigned(r.segment(), "segment");

    Receipt receipt = Receipt.fromCore(r.receipt().core());
    Attestation attestation = Attestation.fromCore(r.attestation().core());
    RunSegment segment = RunSegment.fromCore(r.segment().core());
    String grantsId = Grants.parse(g.getBytes(StandardCharsets.UTF_8)).grantsId();

    assertEquals(new Outcome.Completed(), attestation.outcome());
    assertEquals("\"Completed\"", r.outcomeJson());
    assertEquals(r.receipt().address(), attestation.receipt());
    assertEquals(r.receipt().address(), segment.receipt());
    assertEquals(grantsId, receipt.grantsId());
    assertEquals(grantsId, attestation.grantsId());
    assertEquals(grantsId, segment.grantsId());
    assertEquals(grantsId, r.grantsId());
    assertEquals(r.runId(), receipt.runId());
    assertEquals(r.runId(), segment.runId());
    assertEquals(0, segment.seq());
    assertEquals(node.host().id(), segment.hostId());
    assertEquals(r.unit(), attestation.unit());
    assertEquals("supervised hello\n", r.log());

    // Persisted before submit returned: the store's copies are the ones returned.
    assertEquals(1, store.count());
    assertEquals(
        List.of(r.segment().toJsonLine()),
        store.records(r.runId(), RecordKind.SEGMENT).stream().map(Envelope::toJsonLine).toList());
    assertEquals(
        r.attestation().toJsonLine(),
        store.records(r.runId(), RecordKind.ATTESTATION).get(0).toJsonLine());
    assertInstanceOf(
        SegmentChain.Verdict.Valid.class,
        SegmentChain.verify(store.records(r.runId(), RecordKind.SEGMENT), Optional.of(nodeKey())));

    // The journal root in the attestation is the root of the stored journal.
    List<String> stored = store.journal(r.runId());
    assertEquals(3, stored.size(), "clock, clock, random: " + stored);
    List<JournalEntry> entries = stored.stream().map(JournalEntry::parse).toList();
    assertEquals(Journal.rootOf(entries), attestation.journalRoot());
    assertTrue(!Journal.rootOf(List.of()).equals(attestation.journalRoot()));
  }

  @Test
  void unmeterableDeviceIsDeclinedSignedAndNotExecuted() {
    RunRecord r = supervisor.submit(module, grants("[\"Gpu\"]", ALL_HOST), "run");

    Attestation attestation = Attestation.fromCore(r.attestation().core());
    Outcome.Declined declined = assertInstanceOf(Outcome.Declined.class, attestation.outcome());
    assertTrue(declined.reason().contains("Gpu"), declined.reason());
    assertTrue(r.outcomeJson().startsWith("{\"Declined\""), r.outcomeJson());
    assertSigned(r.receipt(), "receipt");
    assertSigned(r.attestation(), "attestation");
    assertSigned(r.segment(), "segment");
    assertEquals(r.receipt().address(), attestation.receipt());

    // The unit logs first thing when it runs: an empty log and journal mean it never ran.
    assertEquals("", r.log());
    assertEquals(List.of(), store.journal(r.runId()));
    assertEquals(Journal.rootOf(List.of()), attestation.journalRoot());
    Receipt receipt = Receipt.fromCore(r.receipt().core());
    assertEquals(0, receipt.cpuTimeMs());
    assertEquals(0, receipt.totalUj());

    // A declined run is still recorded.
    assertEquals(1, store.count());
    assertTrue(store.run(r.runId()).orElseThrow().outcomeJson().contains("Declined"));
  }

  @Test
  void malformedGrantsAreRefusedNamingThePathAndNothingIsStored() {
    String bad = grants("[]", ALL_HOST).replace("\"cpu_time_ms\":5000", "\"cpu_time_ms\":-5");
    AdmissionException e =
        assertThrows(AdmissionException.class, () -> supervisor.submit(module, bad, "run"));
    assertTrue(e.getMessage().startsWith("grants:"), e.getMessage());
    assertTrue(e.getMessage().contains("$.compute.cpu_time_ms"), e.getMessage());

    String unknown =
        grants("[]", ALL_HOST).replace("\"inbound\":false", "\"inbound\":false,\"x\":1");
    AdmissionException u =
        assertThrows(AdmissionException.class, () -> supervisor.submit(module, unknown, "run"));
    assertTrue(u.getMessage().startsWith("grants:"), u.getMessage());
    assertTrue(u.getMessage().contains("$.network.x"), u.getMessage());

    AdmissionException j =
        assertThrows(
            AdmissionException.class, () -> supervisor.submit(module, "{\"compute\":", "run"));
    assertTrue(j.getMessage().startsWith("grants:"), j.getMessage());

    assertEquals(0, store.count());
  }

  @Test
  void eachPhaseOfASubmittedRunIsTimedOnceInOrder() {
    List<RunPhases.Phase> heard = new ArrayList<>();
    long[] total = {0};
    supervisor.onPhases(
        (phase, nanos) -> {
          assertTrue(nanos > 0, phase + " took " + nanos + " ns");
          heard.add(phase);
          total[0] += nanos;
        });
    long t0 = System.nanoTime();
    supervisor.submit(module, grants("[]", ALL_HOST), "run");
    long wall = System.nanoTime() - t0;
    assertEquals(
        List.of(
            RunPhases.Phase.ADMIT,
            RunPhases.Phase.LAUNCH,
            RunPhases.Phase.SEAL,
            RunPhases.Phase.STORE),
        heard);
    assertTrue(total[0] <= wall, total[0] + " ns of phases in " + wall + " ns");

    // A declined run never launches; a refused one, and the primer's unstored one, time nothing.
    heard.clear();
    supervisor.submit(module, grants("[\"Gpu\"]", ALL_HOST), "run");
    assertEquals(
        List.of(RunPhases.Phase.ADMIT, RunPhases.Phase.SEAL, RunPhases.Phase.STORE), heard);
    heard.clear();
    String bad = grants("[]", ALL_HOST).replace("\"cpu_time_ms\":5000", "\"cpu_time_ms\":-5");
    assertThrows(AdmissionException.class, () -> supervisor.submit(module, bad, "run"));
    supervisor.sealUnstored(Submission.of(module, grants("[]", ALL_HOST), "run"));
    assertEquals(List.of(), heard);
    assertEquals(2, store.count());
    assertThrows(NullPointerException.class, () -> supervisor.onPhases(null));
  }

  @Test
  void malformedModuleIsRefusedAndNothingIsStored() {
    byte[] notWasm = "not a wasm module".getBytes(StandardCharsets.UTF_8);
    assertThrows(
        AdmissionException.class, () -> supervisor.submit(notWasm, grants("[]", ALL_HOST), "run"));
    assertEquals(0, store.count());
  }
}
