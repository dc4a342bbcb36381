package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.sun.net.httpserver.HttpServer;
import io.sandboxd.enforcer.Grants;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
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
  static HttpServer server;
  static String endpoint;
  static final AtomicInteger served = new AtomicInteger();

  @TempDir Path root;

  @BeforeAll
  static void start() throws Exception {
    executor = new Executor(1, EnergyModel.estimate(10_000), 60_000, HostServices.none());
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/",
        ex -> {
          served.incrementAndGet();
          ex.sendResponseHeaders(200, 2);
          ex.getResponseBody().write("ok".getBytes(StandardCharsets.UTF_8));
          ex.close();
        });
    server.start();
    endpoint = "127.0.0.1:" + server.getAddress().getPort();
  }

  @AfterAll
  static void stop() {
    server.stop(0);
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
   * Opens {@code path} for reading under the root descriptor, reads it, then calls egress: returns
   * egress's status, or 1000 + the errno of the WASI call that failed (2000 + for fd_read). With
   * {@code renameTo}, first moves {@code path} there and reads it under its new name.
   */
  static String unit(String path, String renameTo) {
    String req = "{\"method\":\"GET\",\"url\":\"http://" + endpoint + "/out\"}";
    String read = renameTo == null ? path : renameTo;
    String rename =
        renameTo == null
            ? ""
            : """
              (local.set $s (call $rename (i32.const 3) (i32.const 100) (i32.const PLEN)
                                          (i32.const 3) (i32.const 160) (i32.const NLEN)))
              (if (i32.ne (local.get $s) (i32.const 0))
                (then (return (i32.add (i32.const 3000) (local.get $s)))))
              """
                .replace("NLEN", Integer.toString(renameTo.length()));
    return """
        (module
          (import "wasi_snapshot_preview1" "path_open"
            (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
          (import "wasi_snapshot_preview1" "fd_read"
            (func $read (param i32 i32 i32 i32) (result i32)))
          (import "wasi_snapshot_preview1" "path_rename"
            (func $rename (param i32 i32 i32 i32 i32 i32) (result i32)))
          (import "sandbox" "egress" (func $egress (param i32 i32 i32 i32 i32) (result i32)))
          (memory 2)
          (data (i32.const 100) "PATH")
          (data (i32.const 160) "NEW")
          (data (i32.const 200) "\\00\\04\\00\\00\\40\\00\\00\\00")
          (data (i32.const 2000) "REQ")
          (func (export "run") (result i32) (local $s i32)
            RENAME
            (local.set $s (call $open (i32.const 3) (i32.const 0) (i32.const RPTR) (i32.const RLEN)
                                      (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0)
                                      (i32.const 304)))
            (if (i32.ne (local.get $s) (i32.const 0))
              (then (return (i32.add (i32.const 1000) (local.get $s)))))
            (local.set $s (call $read (i32.load (i32.const 304)) (i32.const 200) (i32.const 1)
                                      (i32.const 300)))
            (if (i32.ne (local.get $s) (i32.const 0))
              (then (return (i32.add (i32.const 2000) (local.get $s)))))
            (call $egress (i32.const 2000) (i32.const QLEN) (i32.const 8192) (i32.const 60000)
                          (i32.const 4000))))
        """
        .replace("RENAME", rename)
        .replace("PLEN", Integer.toString(path.length()))
        .replace("PATH", path)
        .replace("NEW", renameTo == null ? "" : renameTo)
        .replace("RPTR", renameTo == null ? "100" : "160")
        .replace("RLEN", Integer.toString(read.length()))
        .replace("REQ", req.replace("\"", "\\\""))
        .replace("QLEN", Integer.toString(req.length()));
  }

  /**
   * Reads inbox/** and data/**, may reach the endpoint; inbox/** is untrusted, opened to {@code
   * open}.
   */
  static Grants grants(String open) {
    String json =
        "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000000,\"cpu_time_ms\":5000,"
            + "\"memory_bytes\":1048576},"
            + "\"storage\":{\"read\":[\"inbox/**\",\"data/**\"],\"write\":[\"inbox/**\",\"data/**\"],"
            + "\"delete\":[\"inbox/**\"]},"
            + "\"network\":{\"outbound\":[\""
            + endpoint
            + "\"],\"inbound\":false},"
            + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
            + "\"host\":{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false},"
            + "\"flow\":{\"untrusted\":[\"storage:inbox/**\"],\"open\":"
            + open
            + "}}";
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  ExecutionResult run(String wat, Grants g) {
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(wat));
    return executor.execute(new UnitRequest("t", unit, "run", g).withStorageRoot(root));
  }

  @Test
  void aWasiReadOfUntrustedStorageTaintsTheRunAndItsSandboxEgressIsTainted() {
    int before = served.get();
    ExecutionResult r = run(unit("inbox/m1", null), grants("[]"));
    assertEquals(AbiStatus.TAINTED, AbiTest.returned(r), r.log());
    assertEquals(Set.of("storage:inbox/**"), r.taint());
    assertEquals(before, served.get(), "a tainted egress never leaves the node");
    // The open already taints: every journaled call from path_open on carries the label.
    JournalEntry open = r.journal().get(0);
    assertEquals("storage_read", open.call());
    assertEquals(java.util.List.of("storage:inbox/**"), open.taintAfter());
  }

  @Test
  void aWasiReadOfTrustedStorageLeavesTheRunCleanAndEgressGoesOut() {
    int before = served.get();
    ExecutionResult r = run(unit("data/x", null), grants("[]"));
    assertEquals(0, AbiTest.returned(r), r.log());
    assertTrue(r.taint().isEmpty(), r.taint().toString());
    assertEquals(before + 1, served.get());
  }

  @Test
  void aFlowGrantOpeningTheSinkToTheOriginAllowsTheSameRun() {
    String open = "[{\"sink\":\"egress:" + endpoint + "\",\"origins\":[\"storage:inbox/**\"]}]";
    ExecutionResult r = run(unit("inbox/m1", null), grants(open));
    assertEquals(0, AbiTest.returned(r), r.log());
    assertEquals(Set.of("storage:inbox/**"), r.taint(), "still tainted, but opened to the sink");
  }

  @Test
  void aReplayOfTheTaintedRunIsTaintedAtTheSameEgress() throws Exception {
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(unit("inbox/m1", null)));
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
