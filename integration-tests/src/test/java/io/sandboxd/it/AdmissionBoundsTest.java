package io.sandboxd.it;

import static io.sandboxd.executor.WasmWriter.bytes;
import static io.sandboxd.executor.WasmWriter.concat;
import static io.sandboxd.executor.WasmWriter.name;
import static io.sandboxd.executor.WasmWriter.u32;
import static io.sandboxd.executor.WasmWriter.vec;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Receipt;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.executor.WasmWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 8 items 6, 8 and 15 against the running daemon (its heap capped at 256 MiB): per-instance
 * structures count against the unit's memory cap, compilation is bounded and charged to the run,
 * malformed input is INVALID_ARGUMENT without a stack trace in the log.
 */
class AdmissionBoundsTest {
  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;

  @BeforeAll
  static void start() throws Exception {
    daemon =
        DaemonProcess.start(
            List.of("-Xmx256m"), dir.resolve("state"), dir.resolve("run/sandboxd.sock"));
    client = new DaemonClient(daemon.socket);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  static String grants(long memoryBytes) {
    return "{\"compute\":{\"devices\":[],\"energy_budget_uj\":5000000000,\"cpu_time_ms\":20000,"
        + "\"memory_bytes\":"
        + memoryBytes
        + "},\"host\":{\"logging\":true}}";
  }

  static SubmitReply submit(DaemonClient c, byte[] module, String grants) {
    return Submissions.submit(c, module, grants, "run", 180);
  }

  static StatusRuntimeException refused(byte[] module, String grants) {
    return assertThrows(StatusRuntimeException.class, () -> submit(client, module, grants));
  }

  static void assertNoStackTraces(DaemonProcess d) throws Exception {
    String log = d.log();
    assertFalse(log.contains("SEVERE"), log);
    assertFalse(log.contains("\tat "), log);
  }

  @Test
  void tablesCountAgainstTheGrantedMemory() throws Exception {
    // 2 tables of 1M entries: ~24 MB of heap against a 64 KiB grant.
    SubmitReply r = submit(client, WasmWriter.tables(2, 1_000_000), grants(65_536));
    assertEquals("{\"Terminated\":{\"breach\":\"Memory\"}}", r.getOutcomeJson());
    // 40 tables of 10M entries (a 280-byte module, ~4.8 GB if allocated) on a 256 MiB daemon.
    byte[] bomb = WasmWriter.tables(40, 10_000_000);
    assertTrue(bomb.length < 400, "module is " + bomb.length + " bytes");
    SubmitReply b = submit(client, bomb, grants(65_536));
    assertEquals("{\"Terminated\":{\"breach\":\"Memory\"}}", b.getOutcomeJson());
    // Two at once, and the daemon still serves.
    var f1 = CompletableFuture.supplyAsync(() -> submit(client, bomb, grants(1L << 40)));
    var f2 = CompletableFuture.supplyAsync(() -> submit(client, bomb, grants(1L << 40)));
    assertEquals(
        "{\"Terminated\":{\"breach\":\"Memory\"}}", f1.get(120, TimeUnit.SECONDS).getOutcomeJson());
    assertEquals(
        "{\"Terminated\":{\"breach\":\"Memory\"}}", f2.get(120, TimeUnit.SECONDS).getOutcomeJson());
    assertEquals(
        "\"Completed\"",
        submit(client, WasmWriter.tables(1, 100), grants(65_536)).getOutcomeJson());
    assertNoStackTraces(daemon);
  }

  @Test
  void compileBombsAreRefusedNamingTheLimit() throws Exception {
    StatusRuntimeException one = refused(WasmWriter.manyLocals(2, 25_001), grants(65_536));
    assertEquals(Status.Code.INVALID_ARGUMENT, one.getStatus().getCode());
    assertTrue(one.getStatus().getDescription().contains("50000 locals"), one.toString());

    // 40 functions of 50,000 locals each in a module of a few hundred bytes.
    byte[] locals = WasmWriter.functionsWithLocals(40, 50_000);
    StatusRuntimeException many = refused(locals, grants(65_536));
    assertEquals(Status.Code.INVALID_ARGUMENT, many.getStatus().getCode());
    assertTrue(many.getStatus().getDescription().contains("locals"), many.toString());

    StatusRuntimeException br = refused(WasmWriter.brTable(1_000_000), grants(65_536));
    assertEquals(Status.Code.INVALID_ARGUMENT, br.getStatus().getCode());
    assertTrue(br.getStatus().getDescription().contains("br_table"), br.toString());
    assertNoStackTraces(daemon);
  }

  @Test
  void compileCpuIsChargedToTheRunThatCompiled() {
    byte[] slow = WasmWriter.brTables(4, 30_000, 7);
    SubmitReply first = submit(client, slow, grants(1 << 20));
    SubmitReply cached = submit(client, slow, grants(1 << 20));
    long firstCpu = cpuMs(first);
    long cachedCpu = cpuMs(cached);
    assertTrue(firstCpu >= 100, "first run's receipt shows " + firstCpu + " ms of CPU");
    assertTrue(cachedCpu < firstCpu, "cached " + cachedCpu + " vs first " + firstCpu);
  }

  static long cpuMs(SubmitReply r) {
    return Receipt.fromCore(Envelope.fromJson(CanonicalJson.parse(r.getReceipt())).core())
        .cpuTimeMs();
  }

  @Test
  void compilationIsBoundedInTimeAndConcurrency() throws Exception {
    try (DaemonProcess d =
            DaemonProcess.startWithConfig(
                List.of("-Xmx256m"),
                dir.resolve("state2"),
                dir.resolve("run2/sandboxd.sock"),
                "{\"compile\":{\"max_concurrent\":1,\"timeout_ms\":1000}}");
        DaemonClient c = new DaemonClient(d.socket)) {
      // Seconds of compiling (within the validation limits): refused at the 1 s budget, its slot
      // held until it ends.
      byte[] heavy = WasmWriter.brTables(4, 60_000, 1);
      StatusRuntimeException slow =
          assertThrows(StatusRuntimeException.class, () -> submit(c, heavy, grants(1 << 20)));
      assertEquals(Status.Code.INVALID_ARGUMENT, slow.getStatus().getCode());
      assertTrue(slow.getStatus().getDescription().contains("1000 ms"), slow.toString());
      // The only compile slot is still taken by the abandoned compilation.
      StatusRuntimeException busy =
          assertThrows(
              StatusRuntimeException.class,
              () -> submit(c, WasmWriter.brTables(1, 11, 0), grants(1 << 20)));
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, busy.getStatus().getCode(), busy.toString());
      // Once it ends, the node compiles again.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(240);
      while (true) {
        try {
          assertEquals(
              "\"Completed\"",
              submit(c, WasmWriter.brTables(1, 12, 0), grants(1 << 20)).getOutcomeJson());
          break;
        } catch (StatusRuntimeException e) {
          if (System.nanoTime() > deadline) {
            throw e;
          }
        }
      }
      assertNoStackTraces(d);
    }
  }

  @Test
  void malformedInputIsInvalidArgumentWithoutAStackTrace() throws Exception {
    String ok = grants(1 << 20);
    // A lone surrogate in the grants.
    StatusRuntimeException s =
        refused(
            WasmWriter.minimal(),
            "{\"storage\":{\"read\":[\"a\\ud800\"],\"write\":[],\"delete\":[]}}");
    assertEquals(Status.Code.INVALID_ARGUMENT, s.getStatus().getCode(), s.toString());
    assertTrue(s.getStatus().getDescription().contains("surrogate"), s.toString());

    // An entry that is an imported function.
    byte[] reexport =
        new WasmWriter()
            .section(WasmWriter.TYPE, vec(bytes(0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f)))
            .section(
                WasmWriter.IMPORT, vec(concat(name("sandbox"), name("log"), bytes(0x00), u32(0))))
            .section(WasmWriter.EXPORT, vec(concat(name("run"), bytes(0x00), u32(0))))
            .bytes();
    StatusRuntimeException imp = refused(reexport, ok);
    assertEquals(Status.Code.INVALID_ARGUMENT, imp.getStatus().getCode(), imp.toString());

    // Export indices -1 and out of range.
    for (long index : new long[] {0xFFFF_FFFFL, 5}) {
      byte[] m = WasmWriter.runModule(index, WasmWriter.returning(0));
      StatusRuntimeException e = refused(m, ok);
      assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), e.toString());
      assertTrue(e.getStatus().getDescription().contains("export 0"), e.toString());
    }

    // Flipped, truncated and inserted bytes: each a run or INVALID_ARGUMENT, never anything else.
    long seed = new Random().nextLong();
    Random r = new Random(seed);
    List<byte[]> seeds = new ArrayList<>();
    seeds.add(WasmWriter.minimal());
    seeds.add(WasmWriter.tables(2, 10));
    seeds.add(WasmWriter.brTable(8));
    seeds.add(Files.readAllBytes(DaemonProcess.ROOT.resolve("examples/hello.wasm")));
    for (int i = 0; i < 150; i++) {
      byte[] m = seeds.get(r.nextInt(seeds.size())).clone();
      int at = r.nextInt(m.length);
      switch (r.nextInt(3)) {
        case 0 -> m[at] = (byte) (m[at] ^ (1 << r.nextInt(8)));
        case 1 -> m = java.util.Arrays.copyOf(m, at);
        default -> m[at] = (byte) r.nextInt(256);
      }
      try {
        submit(client, m, ok);
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getCode() != Status.Code.INVALID_ARGUMENT) {
          fail("seed " + seed + " mutation " + i + ": " + e);
        }
      }
    }
    assertNoStackTraces(daemon);
  }
}
