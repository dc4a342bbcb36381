package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Outcome;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.SecretBindings;
import io.sandboxd.enforcer.SecretTarget;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The `sandbox` imports against real services: each unit returns the status it got, so the outcome
 * ("entry returned N") names exactly what the guest saw.
 */
class AbiTest {
  @TempDir static Path dir;
  static Executor executor;
  static KvStore kv;
  static final UnitCompiler COMPILER = new UnitCompiler(64);

  @BeforeAll
  static void start() {
    kv = KvStore.open(dir.resolve("kv.db"));
    executor =
        new Executor(2, EnergyModel.estimate(10_000), 60_000, HostServices.none().withKv(kv));
  }

  @AfterAll
  static void stop() throws Exception {
    executor.close();
    kv.close();
  }

  static String grants(String storage, String kvGrant, String network, String host) {
    return "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000000,\"cpu_time_ms\":5000,"
        + "\"memory_bytes\":1048576},\"storage\":"
        + storage
        + ",\"network\":"
        + network
        + ",\"kv\":"
        + kvGrant
        + ",\"host\":"
        + host
        + "}";
  }

  static final String NO_STORAGE = "{\"read\":[],\"write\":[],\"delete\":[]}";
  static final String NO_KV = "{\"read\":false,\"write\":false,\"prefixes\":[]}";
  static final String NO_NET = "{\"outbound\":[],\"inbound\":false}";
  static final String LOG =
      "{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}";

  ExecutionResult run(String wat, String grantsJson, Path storage) {
    return run(executor, wat, grantsJson, storage);
  }

  static ExecutionResult run(Executor executor, String wat, String grantsJson, Path storage) {
    CompiledUnit unit = COMPILER.compile(Wat2Wasm.parse(wat));
    UnitRequest req =
        new UnitRequest(
            "t", unit, "run", Grants.parse(grantsJson.getBytes(StandardCharsets.UTF_8)));
    return executor.execute(storage == null ? req : req.withStorageRoot(storage));
  }

  static int returned(ExecutionResult r) {
    if (r.outcome() instanceof Outcome.Completed) {
      return 0;
    }
    String reason = ((Outcome.Failed) r.outcome()).reason();
    assertTrue(reason.startsWith("entry returned "), reason);
    return Integer.parseInt(reason.substring("entry returned ".length()));
  }

  /** kv_put then kv_get of the same key; returns the get's status and logs the value. */
  static String kvRoundTrip(String key) {
    return """
        (module
          (import "sandbox" "kv_put" (func $put (param i32 i32 i32 i32) (result i32)))
          (import "sandbox" "kv_get" (func $get (param i32 i32 i32 i32 i32) (result i32)))
          (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
          (memory 1)
          (data (i32.const 0) "KEY")
          (data (i32.const 64) "value-1")
          (func (export "run") (result i32) (local $s i32)
            (local.set $s (call $put (i32.const 0) (i32.const KLEN) (i32.const 64) (i32.const 7)))
            (if (i32.ne (local.get $s) (i32.const 0)) (then (return (i32.add (i32.const 100) (local.get $s)))))
            (local.set $s (call $get (i32.const 0) (i32.const KLEN) (i32.const 128) (i32.const 64) (i32.const 120)))
            (if (i32.ne (local.get $s) (i32.const 0)) (then (return (local.get $s))))
            (drop (call $log (i32.const 128) (i32.load (i32.const 120))))
            (i32.const 0)))
        """
        .replace("KEY", key)
        .replace("KLEN", Integer.toString(key.length()));
  }

  @Test
  void kvIsScopedByDirectionAndPrefix() {
    String rw = "{\"read\":true,\"write\":true,\"prefixes\":[[117,115,101,114,47]]}";
    ExecutionResult ok = run(kvRoundTrip("user/1"), grants(NO_STORAGE, rw, NO_NET, LOG), null);
    assertEquals(0, returned(ok));
    assertEquals("value-1\n", ok.log());
    // The put's answer is journaled too, so a replay answers it without writing.
    assertEquals("kv_put", ok.journal().get(0).call());
    assertEquals("kv_get", ok.journal().get(1).call());

    ExecutionResult outside = run(kvRoundTrip("adm/1"), grants(NO_STORAGE, rw, NO_NET, LOG), null);
    assertEquals(100 + AbiStatus.DENIED, returned(outside));

    String readOnly = "{\"read\":true,\"write\":false,\"prefixes\":[]}";
    ExecutionResult ro =
        run(kvRoundTrip("user/1"), grants(NO_STORAGE, readOnly, NO_NET, LOG), null);
    assertEquals(100 + AbiStatus.DENIED, returned(ro));
  }

  @Test
  void kvGetTooSmallWritesTheNeededLength() {
    String wat =
        """
        (module
          (import "sandbox" "kv_put" (func $put (param i32 i32 i32 i32) (result i32)))
          (import "sandbox" "kv_get" (func $get (param i32 i32 i32 i32 i32) (result i32)))
          (memory 1)
          (data (i32.const 0) "big/k")
          (func (export "run") (result i32)
            (drop (call $put (i32.const 0) (i32.const 5) (i32.const 64) (i32.const 300)))
            (if (i32.ne (call $get (i32.const 0) (i32.const 5) (i32.const 1024) (i32.const 10) (i32.const 1000))
                        (i32.const -4))
              (then (return (i32.const 1))))
            (i32.load (i32.const 1000))))
        """;
    String rw = "{\"read\":true,\"write\":true,\"prefixes\":[]}";
    assertEquals(300, returned(run(wat, grants(NO_STORAGE, rw, NO_NET, LOG), null)));
  }

  static String storageUnit(String path, boolean write) {
    return """
        (module
          (import "sandbox" "storage_write" (func $w (param i32 i32 i64 i32 i32) (result i32)))
          (import "sandbox" "storage_read" (func $r (param i32 i32 i64 i32 i32 i32) (result i32)))
          (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
          (memory 1)
          (data (i32.const 0) "PATH")
          (data (i32.const 200) "stored bytes")
          (func (export "run") (result i32) (local $s i32)
            WRITE
            (local.set $s (call $r (i32.const 0) (i32.const PLEN) (i64.const 0) (i32.const 300) (i32.const 100) (i32.const 296)))
            (if (i32.ne (local.get $s) (i32.const 0)) (then (return (local.get $s))))
            (drop (call $log (i32.const 300) (i32.load (i32.const 296))))
            (i32.const 0)))
        """
        .replace("PATH", path)
        .replace("PLEN", Integer.toString(path.getBytes(StandardCharsets.UTF_8).length))
        .replace(
            "WRITE",
            write
                ? "(local.set $s (call $w (i32.const 0) (i32.const PLEN) (i64.const 0) (i32.const 200) (i32.const 12)))\n(if (i32.ne (local.get $s) (i32.const 0)) (then (return (i32.add (i32.const 100) (local.get $s)))))"
                    .replace("PLEN", Integer.toString(path.getBytes(StandardCharsets.UTF_8).length))
                : "");
  }

  @Test
  void storageStaysInsideItsRootWhateverTheGlobsSay() throws Exception {
    Path root = Files.createDirectories(dir.resolve("unit-storage"));
    String rw = "{\"read\":[\"**\"],\"write\":[\"data/**\"],\"delete\":[]}";
    ExecutionResult ok = run(storageUnit("data/a.txt", true), grants(rw, NO_KV, NO_NET, LOG), root);
    assertEquals(0, returned(ok));
    assertEquals("stored bytes\n", ok.log());
    assertEquals("stored bytes", Files.readString(root.resolve("data/a.txt")));
    assertEquals(12, ok.io().storage().readBytes());
    assertEquals(12, ok.io().storage().writeBytes());

    // Write outside the write globs.
    assertEquals(
        100 + AbiStatus.DENIED,
        returned(run(storageUnit("other.txt", true), grants(rw, NO_KV, NO_NET, LOG), root)));
    // `..` is refused at normalization even though "**" would match anything.
    assertEquals(
        AbiStatus.DENIED,
        returned(
            run(
                storageUnit("data/../../etc/passwd", false),
                grants(rw, NO_KV, NO_NET, LOG),
                root)));
    // A planted symlink pointing out of the root.
    Path secret = Files.writeString(dir.resolve("outside-secret"), "nope");
    Files.createSymbolicLink(root.resolve("link"), secret);
    assertEquals(
        AbiStatus.DENIED,
        returned(run(storageUnit("link", false), grants(rw, NO_KV, NO_NET, LOG), root)));
    Files.createSymbolicLink(root.resolve("dirlink"), dir);
    assertEquals(
        AbiStatus.DENIED,
        returned(
            run(
                storageUnit("dirlink/outside-secret", false),
                grants(rw, NO_KV, NO_NET, LOG),
                root)));
    // Missing file.
    assertEquals(
        AbiStatus.NOT_FOUND,
        returned(run(storageUnit("data/none", false), grants(rw, NO_KV, NO_NET, LOG), root)));
  }

  @Test
  void ioCeilingIsARate() throws Exception {
    Path root = Files.createDirectories(dir.resolve("rate"));
    Files.writeString(root.resolve("f"), "x");
    String wat =
        """
        (module
          (import "sandbox" "storage_read" (func $r (param i32 i32 i64 i32 i32 i32) (result i32)))
          (memory 1)
          (data (i32.const 0) "f")
          (func (export "run") (result i32) (local $i i32) (local $s i32)
            (loop $l
              (local.set $s (call $r (i32.const 0) (i32.const 1) (i64.const 0) (i32.const 100) (i32.const 10) (i32.const 96)))
              (if (i32.ne (local.get $s) (i32.const 0)) (then (return (local.get $s))))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $l (i32.lt_u (local.get $i) (i32.const 10))))
            (i32.const 0)))
        """;
    String capped = "{\"read\":[\"**\"],\"write\":[],\"delete\":[],\"max_iops\":3}";
    assertEquals(AbiStatus.RATE, returned(run(wat, grants(capped, NO_KV, NO_NET, LOG), root)));
    String uncapped = "{\"read\":[\"**\"],\"write\":[],\"delete\":[]}";
    assertEquals(0, returned(run(wat, grants(uncapped, NO_KV, NO_NET, LOG), root)));
  }

  @Test
  void egressGoesOnlyToAllowlistedEndpointsAndInjectsCredentialsTheGuestNeverSees()
      throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    AtomicReference<String> auth = new AtomicReference<>();
    server.createContext(
        "/",
        ex -> {
          auth.set(ex.getRequestHeaders().getFirst("Authorization"));
          ok(ex, "pong");
        });
    server.start();
    try {
      int port = server.getAddress().getPort();
      String endpoint = "127.0.0.1:" + port;
      String net =
          "{\"outbound\":[\""
              + endpoint
              + "\"],\"inbound\":false,\"credentials\":[{\"endpoint\":\""
              + endpoint
              + "\",\"secret_ref\":\"vault:token\",\"inject\":{\"Header\":{\"name\":"
              + "\"Authorization\",\"prefix\":\"Bearer \"}}}]}";
      String req = "{\"method\":\"GET\",\"url\":\"http://" + endpoint + "/ping\"}";
      SecretBindings bound =
          new SecretBindings(
              Map.of("vault:token", List.of(SecretTarget.parse("http://" + endpoint + "/"))));
      Executor withSecret =
          new Executor(
              1,
              EnergyModel.estimate(10_000),
              60_000,
              HostServices.none()
                  .withSecrets(SecretStore.of(bound, Map.of("vault:token", "s3cr3t"))));
      ExecutionResult ok;
      try (withSecret) {
        ok =
            run(withSecret, EgressGuest.logsAnswer(req), grants(NO_STORAGE, NO_KV, net, LOG), null);
      }
      assertEquals(0, returned(ok));
      assertTrue(ok.log().contains("\"status\":200"), ok.log());
      assertTrue(ok.log().contains("cG9uZw=="), ok.log()); // base64("pong")
      assertEquals("Bearer s3cr3t", auth.get());
      assertFalse(ok.log().contains("s3cr3t"));
      assertFalse(
          ok.journalBlobs().values().stream()
              .anyMatch(b -> new String(b, StandardCharsets.ISO_8859_1).contains("s3cr3t")),
          "no secret in any journaled response");

      auth.set(null);
      String denied = "{\"url\":\"http://127.0.0.1:" + (port + 1) + "/\"}";
      ExecutionResult d =
          run(EgressGuest.logsAnswer(denied), grants(NO_STORAGE, NO_KV, net, LOG), null);
      assertEquals(AbiStatus.DENIED, returned(d));
      assertEquals("Denied", d.journal().get(0).decision());
      assertEquals(null, auth.get());

      assertEquals(
          AbiStatus.INVALID,
          returned(
              run(
                  EgressGuest.logsAnswer("{\"url\":\"ftp://x\"}"),
                  grants(NO_STORAGE, NO_KV, net, LOG),
                  null)));
    } finally {
      server.stop(0);
    }
  }

  static String execUnit(String requestJson) {
    return EgressGuest.logsAnswer(requestJson).replace("\"egress\"", "\"exec\"");
  }

  @Test
  void execDecidesOnTheBinaryNotTheName() throws Exception {
    String proc = ",\"process\":{\"exec\":true,\"programs\":[\"echo\"],\"max_processes\":1}";
    String g = grants(NO_STORAGE, NO_KV, NO_NET, LOG).replaceFirst("}$", proc + "}");
    ExecutionResult ok = run(execUnit("{\"program\":\"echo\",\"args\":[\"hi\"]}"), g, null);
    assertEquals(0, returned(ok));
    assertTrue(ok.log().contains("\"exit\":0"), ok.log());
    assertTrue(ok.log().contains("aGkK"), ok.log()); // base64("hi\n")

    assertEquals(
        AbiStatus.DENIED,
        returned(run(execUnit("{\"program\":\"ls\"}"), g, null)),
        "ls is not in programs");

    // The node's denylist holds echo's hash: a copy renamed to an allowed name stays denied.
    Path echo = Path.of("/bin/echo").toRealPath();
    String hash = io.sandboxd.attest.Blake3.hex(Files.readAllBytes(echo));
    Path renamed = Files.copy(echo, dir.resolve("cat"));
    renamed.toFile().setExecutable(true);
    HostServices deny = HostServices.none().withExecDenylist(java.util.Set.of("b3:" + hash));
    try (Executor strict = new Executor(1, EnergyModel.estimate(10_000), 60_000, deny)) {
      String g2 =
          grants(NO_STORAGE, NO_KV, NO_NET, LOG)
              .replaceFirst(
                  "}$",
                  ",\"process\":{\"exec\":true,\"programs\":[\"cat\",\"echo\"],\"max_processes\":1}}");
      CompiledUnit unit =
          COMPILER.compile(Wat2Wasm.parse(execUnit("{\"program\":\"" + renamed + "\"}")));
      ExecutionResult r =
          strict.execute(
              new UnitRequest("t", unit, "run", Grants.parse(g2.getBytes(StandardCharsets.UTF_8))));
      assertEquals(AbiStatus.DENIED, returned(r));
    }
  }

  @Test
  void inferForwardsToTheNodesEndpointOnlyWhenGranted() throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    AtomicReference<String> seen = new AtomicReference<>();
    server.createContext(
        "/v1/chat/completions",
        ex -> {
          seen.set(new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
          ok(ex, "{\"choices\":[{\"text\":\"hi\"}]}");
        });
    server.start();
    java.net.URI endpoint =
        java.net.URI.create(
            "http://127.0.0.1:" + server.getAddress().getPort() + "/v1/chat/completions");
    String wat =
        EgressGuest.logsAnswer("{\"model\":\"m\",\"prompt\":\"hello\"}")
            .replace("\"egress\"", "\"infer\"");
    String inferHost = "{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":true}";
    try (Executor withModel =
        new Executor(
            1,
            EnergyModel.estimate(10_000),
            60_000,
            HostServices.none().withInference(endpoint, DeviceClass.Cpu))) {
      ExecutionResult ok = run(withModel, wat, grants(NO_STORAGE, NO_KV, NO_NET, inferHost), null);
      assertEquals(0, returned(ok));
      assertEquals("{\"choices\":[{\"text\":\"hi\"}]}\n", ok.log());
      assertEquals("{\"model\":\"m\",\"prompt\":\"hello\"}", seen.get());
      assertEquals("inference", ok.journal().get(0).call());
      assertEquals(1, ok.io().inference().calls());

      seen.set(null);
      ExecutionResult denied = run(withModel, wat, grants(NO_STORAGE, NO_KV, NO_NET, LOG), null);
      assertEquals(AbiStatus.DENIED, returned(denied));
      assertEquals(null, seen.get());
    } finally {
      server.stop(0);
    }
    // Granted, but this node has no inference endpoint configured.
    ExecutionResult none = run(wat, grants(NO_STORAGE, NO_KV, NO_NET, inferHost), null);
    assertEquals(AbiStatus.UNAVAILABLE, returned(none));
  }

  @Test
  void hostileArgumentsAreStatusesNotCrashes() {
    String wat =
        """
        (module
          (import "sandbox" "kv_get" (func $get (param i32 i32 i32 i32 i32) (result i32)))
          (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
          (import "sandbox" "clock_now" (func $clock (param i32) (result i32)))
          (memory 1)
          (func (export "run") (result i32)
            ;; a len_out far past the end of memory
            (if (i32.ne (call $get (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 10) (i32.const -1)) (i32.const -5))
              (then (return (i32.const 1))))
            ;; a length that wraps around 2^32
            (if (i32.ne (call $log (i32.const 10) (i32.const -8)) (i32.const -6))
              (then (return (i32.const 2))))
            (if (i32.ne (call $log (i32.const 65535) (i32.const 2)) (i32.const -5))
              (then (return (i32.const 3))))
            (if (i32.ne (call $clock (i32.const 65530)) (i32.const -5))
              (then (return (i32.const 4))))
            (i32.const 0)))
        """;
    String rw = "{\"read\":true,\"write\":true,\"prefixes\":[]}";
    assertEquals(0, returned(run(wat, grants(NO_STORAGE, rw, NO_NET, LOG), null)));
  }

  @Test
  void aHostCallFloodIsBoundedByCpuTime() {
    String wat =
        """
        (module
          (import "sandbox" "clock_now" (func $clock (param i32) (result i32)))
          (memory 1)
          (func (export "run") (result i32)
            (loop $l (drop (call $clock (i32.const 0))) (br $l))
            (i32.const 0)))
        """;
    String g =
        grants(NO_STORAGE, NO_KV, NO_NET, LOG)
            .replace("\"cpu_time_ms\":5000", "\"cpu_time_ms\":200");
    ExecutionResult r = run(wat, g, null);
    assertEquals(new Outcome.Terminated(Outcome.Breach.CpuTime), r.outcome());
    assertTrue(r.hostCalls() > 1000, "calls: " + r.hostCalls());
  }

  @Test
  void aJournaledFloodFillsTheJournalAndEndsTheRunNotTheHeap() {
    String wat =
        """
        (module
          (import "sandbox" "yield_point" (func $y (result i32)))
          (func (export "run") (result i32)
            (loop $l (drop (call $y)) (br $l))
            (i32.const 0)))
        """;
    String g =
        grants(NO_STORAGE, NO_KV, NO_NET, LOG)
            .replace("\"cpu_time_ms\":5000", "\"cpu_time_ms\":60000")
            .replace("\"energy_budget_uj\":1000000000", "\"energy_budget_uj\":9000000000000");
    ExecutionResult r = run(wat, g, null);
    Outcome.Failed f = assertInstanceOf(Outcome.Failed.class, r.outcome());
    assertTrue(f.reason().startsWith("replay journal full"), f.reason());
    assertEquals(Journal.MAX_ENTRIES, r.journal().size());
  }

  @Test
  void deepRecursionFailsTheUnitNotTheDaemon() {
    String wat =
        """
        (module
          (func $f (param i32) (result i32) (call $f (i32.add (local.get 0) (i32.const 1))))
          (func (export "run") (result i32) (call $f (i32.const 0))))
        """;
    ExecutionResult r = run(wat, grants(NO_STORAGE, NO_KV, NO_NET, LOG), null);
    assertTrue(r.outcome() instanceof Outcome.Failed, r.outcome().toString());
  }

  @Test
  void aMemoryBombStopsAtTheGrant() {
    ExecutionResult r = run(ExecutorTest.MEMORY_BOMB, grants(NO_STORAGE, NO_KV, NO_NET, LOG), null);
    // The grant allows 1 MiB = 16 pages: growth stops there, inside the guest.
    assertEquals(16, returned(r));
    assertEquals(16 * 65536, r.memoryPeakBytes());
    assertEquals(List.of(), r.journal());
  }

  /** Answers {@code ex} 200 with {@code body} (UTF-8) and ends the exchange. */
  private static void ok(HttpExchange ex, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    ex.sendResponseHeaders(200, bytes.length);
    ex.getResponseBody().write(bytes);
    ex.close();
  }
}
