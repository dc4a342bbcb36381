package io.sandboxd.executor;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Outcome;
import io.sandboxd.enforcer.Grants;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A WASI command's argv, stdin, stdout, stderr and exit status ({@code src/test/c/wasi_io.c}, built
 * with clang-16 during the test).
 */
class WasiIoTest {
  static CompiledUnit io;
  static final Grants LOGGING =
      WasiGuestTest.grants(WasiGuestTest.NO_STORAGE, WasiGuestTest.LOG_ONLY);

  @BeforeAll
  static void build() {
    io = WasiGuestTest.COMPILER.compile(WasiToolchain.build("wasi_io"));
  }

  static ExecutionResult run(Grants g, UnitIo unitIo) {
    return WasiGuestTest.EXECUTOR.execute(new UnitRequest("io", io, "_start", g).withIo(unitIo));
  }

  static UnitIo args(String... argv) {
    return new UnitIo(List.of(argv), Optional.empty(), 1 << 20, 1 << 20);
  }

  static String stdout(ExecutionResult r) {
    return new String(r.stdio().orElseThrow().stdout().bytes(), UTF_8);
  }

  static String stderr(ExecutionResult r) {
    return new String(r.stdio().orElseThrow().stderr().bytes(), UTF_8);
  }

  @Test
  void theGivenArgvIsWhatTheGuestSeesAndNoneMeansTheUnitsAddress() {
    ExecutionResult r = run(LOGGING, args("prog", "echo", "", "two words", "ünï", "-x=1"));
    assertEquals(new Outcome.Completed(), r.outcome(), r.log());
    assertEquals("argc=6\n[prog]\n[echo]\n[]\n[two words]\n[ünï]\n[-x=1]\n", stdout(r));
    assertEquals("", stderr(r));
    assertEquals("", r.log(), "stdout is not the run log");
    assertEquals(0, r.exitStatus());
    assertFalse(r.exited());

    ExecutionResult none = run(LOGGING, UnitIo.NONE);
    assertEquals("argc=1 argv0=" + io.address() + "\n", stdout(none));
  }

  @Test
  void stdinIsReadToItsEndAndStdoutAndStderrAreSeparate() {
    long seed = 16_001;
    byte[] in = new byte[100_000];
    new Random(seed).nextBytes(in);
    ExecutionResult r =
        run(LOGGING, new UnitIo(List.of("prog", "cat"), Optional.of(in), 1 << 20, 1 << 20));
    assertEquals(new Outcome.Completed(), r.outcome(), r.log());
    assertArrayEquals(in, r.stdio().orElseThrow().stdout().bytes(), "seed " + seed);
    assertEquals("read 100000 bytes\n", stderr(r));

    ExecutionResult empty =
        run(LOGGING, new UnitIo(List.of("prog", "cat"), Optional.of(new byte[0]), 100, 100));
    assertEquals("read 0 bytes\n", stderr(empty));
    ExecutionResult none = run(LOGGING, args("prog", "cat"));
    assertEquals("read 0 bytes\n", stderr(none), "no stdin reads as EOF at once");
  }

  @Test
  void aGuestThatKeepsReadingStdinGetsEofEveryTime() {
    byte[] in = "twelve bytes".getBytes(UTF_8);
    ExecutionResult r =
        run(LOGGING, new UnitIo(List.of("prog", "drain"), Optional.of(in), 1 << 20, 1 << 20));
    assertEquals(new Outcome.Completed(), r.outcome(), r.log());
    assertEquals("total=12 eofs=99999\n", stdout(r));
  }

  @Test
  void outputPastTheCapIsCutCountedAndNoted() {
    ExecutionResult r =
        run(LOGGING, new UnitIo(List.of("prog", "spew", "300000"), Optional.empty(), 1000, 3));
    assertEquals(new Outcome.Completed(), r.outcome(), r.log());
    ExecutionResult.Output out = r.stdio().orElseThrow().stdout();
    assertEquals(1000, out.bytes().length);
    assertEquals(300_000, out.written());
    assertTrue(out.truncated());
    assertEquals("x".repeat(1000), new String(out.bytes(), UTF_8));
    assertEquals("spe", stderr(r));
    assertEquals(7, r.stdio().orElseThrow().stderr().written());
    assertTrue(
        r.log().contains("stdout truncated at the node's cap of 1000 bytes; the unit wrote 300000"),
        r.log());
    assertTrue(r.log().contains("stderr truncated at the node's cap of 3 bytes"), r.log());
  }

  @Test
  void procExitIsTheExitStatusWholeAbove255() {
    for (long status : new long[] {0, 1, 7, 255, 256, 1000, 4_294_967_295L}) {
      ExecutionResult r = run(LOGGING, args("prog", "exit", Long.toString(status)));
      assertEquals("bye\n", stdout(r), "status " + status);
      assertEquals("err\n", stderr(r), "status " + status);
      assertEquals(status, Integer.toUnsignedLong(r.exitStatus()), "status " + status);
      if (status == 0) {
        assertEquals(new Outcome.Completed(), r.outcome());
      } else {
        assertTrue(r.exited());
        assertEquals(new Outcome.Failed("exit status " + status), r.outcome());
      }
    }
  }

  @Test
  void aSandboxAbiUnitHasNoStdio() {
    CompiledUnit plain =
        WasiGuestTest.COMPILER.compile(
            com.dylibso.chicory.wabt.Wat2Wasm.parse(
                "(module (func (export \"run\") (result i32) (i32.const 0)))"));
    ExecutionResult r =
        WasiGuestTest.EXECUTOR.execute(new UnitRequest("plain", plain, "run", LOGGING));
    assertEquals(new Outcome.Completed(), r.outcome());
    assertTrue(r.stdio().isEmpty());
  }

  @Test
  void manyArgumentsArriveInOrder() {
    List<String> argv = new ArrayList<>(List.of("prog", "echo"));
    StringBuilder expect = new StringBuilder("argc=2002\n[prog]\n[echo]\n");
    for (int i = 0; i < 2000; i++) {
      argv.add("a" + i);
      expect.append("[a").append(i).append("]\n");
    }
    ExecutionResult r = run(LOGGING, new UnitIo(argv, Optional.empty(), 1 << 20, 1 << 20));
    assertEquals(expect.toString(), stdout(r));
  }
}
