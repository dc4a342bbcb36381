package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Taint flows through WASI as it does through {@code storage_read} (WIRE.md §3.3): one guest
 * importing both namespaces reads a file through {@code path_open}/{@code fd_read} and then asks
 * {@code sandbox.egress}; the flow grant alone decides whether that egress is TAINTED.
 */
class WasiTaintTest {
  static final UnitCompiler COMPILER = new UnitCompiler(8);
  static Executor executor;
  static CountingEndpoint sink;
  static String endpoint;

  @TempDir Path root;

  @BeforeAll
  static void start() throws Exception {
    executor = new Executor(1, EnergyModel.estimate(10_000), 60_000, HostServices.none());
    sink = new CountingEndpoint();
    endpoint = sink.address;
  }

  @AfterAll
  static void stop() {
    sink.close();
    executor.close();
  }

  @BeforeEach
  void files() throws Exception {
    Files.createDirectories(root.resolve("inbox"));
    Files.createDirectories(root.resolve("data"));
    Files.writeString(root.resolve("inbox/m1"), "untrusted mail");
    Files.writeString(root.resolve("data/x"), "trusted data");
  }

  /**
   * Reads inbox/** and data/**, may reach the endpoint; inbox/** is untrusted, opened to {@code
   * open}.
   */
  static Grants grants(String open) {
    return Grants.parse(TaintGuest.grants(endpoint, open).getBytes(StandardCharsets.UTF_8));
  }

  ExecutionResult run(String wat, Grants g) {
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(wat));
    return executor.execute(new UnitRequest("t", unit, "run", g).withStorageRoot(root));
  }

  @Test
  void aWasiReadOfUntrustedStorageTaintsTheRunAndItsSandboxEgressIsTainted() {
    int before = sink.hits.get();
    ExecutionResult r = run(TaintGuest.readThenEgress("inbox/m1", endpoint), grants("[]"));
    assertEquals(AbiStatus.TAINTED, AbiTest.returned(r), r.log());
    assertEquals(Set.of("storage:inbox/**"), r.taint());
    assertEquals(before, sink.hits.get(), "a tainted egress never leaves the node");
    // The open already taints: every journaled call from path_open on carries the label.
    JournalEntry open = r.journal().get(0);
    assertEquals("storage_read", open.call());
    assertEquals(java.util.List.of("storage:inbox/**"), open.taintAfter());
  }

  @Test
  void aWasiReadOfTrustedStorageLeavesTheRunCleanAndEgressGoesOut() {
    int before = sink.hits.get();
    ExecutionResult r = run(TaintGuest.readThenEgress("data/x", endpoint), grants("[]"));
    assertEquals(0, AbiTest.returned(r), r.log());
    assertTrue(r.taint().isEmpty(), r.taint().toString());
    assertEquals(before + 1, sink.hits.get());
  }

  @Test
  void aFlowGrantOpeningTheSinkToTheOriginAllowsTheSameRun() {
    String open = "[{\"sink\":\"egress:" + endpoint + "\",\"origins\":[\"storage:inbox/**\"]}]";
    ExecutionResult r = run(TaintGuest.readThenEgress("inbox/m1", endpoint), grants(open));
    assertEquals(0, AbiTest.returned(r), r.log());
    assertEquals(Set.of("storage:inbox/**"), r.taint(), "still tainted, but opened to the sink");
  }

  @Test
  void aReplayOfTheTaintedRunIsTaintedAtTheSameEgress() throws Exception {
    CompiledUnit unit =
        COMPILER.compile(Wat2Wasm.parse(TaintGuest.readThenEgress("inbox/m1", endpoint)));
    Grants g = grants("[]");
    ExecutionResult live =
        executor.execute(new UnitRequest("t", unit, "run", g).withStorageRoot(root));
    // The replay reads nothing from disk: the file may be gone, the decisions are the record's.
    Files.delete(root.resolve("inbox/m1"));
    ReplaySource source = new ReplaySource(live.journal(), live.journalBlobs());
    ExecutionResult replay =
        executor.execute(
            new UnitRequest("t", unit, "run", g).withStorageRoot(root).withReplay(source));
    assertTrue(replay.replayDivergence().isEmpty(), () -> replay.replayDivergence().toString());
    assertEquals(AbiStatus.TAINTED, AbiTest.returned(replay));
    assertEquals(live.taint(), replay.taint());
    assertEquals(live.journalRoot(), replay.journalRoot());
  }
}
