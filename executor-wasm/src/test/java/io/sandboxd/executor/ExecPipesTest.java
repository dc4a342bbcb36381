package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/** An exec's pipes never hold the run's thread: its timeout holds whatever the program reads. */
class ExecPipesTest {
  /** A unit whose one exec sends {@code stdinBytes} to {@code program 30}; returns its status. */
  private static String unit(String program, int stdinBytes) {
    String stdin = Base64.getEncoder().encodeToString(new byte[stdinBytes]);
    String req = "{\"program\":\"" + program + "\",\"args\":[\"30\"],\"stdin\":\"" + stdin + "\"}";
    return """
        (module
          (import "sandbox" "exec" (func $e (param i32 i32 i32 i32 i32) (result i32)))
          (memory 8)
          (data (i32.const 131072) "REQ")
          (func (export "run") (result i32)
            (call $e (i32.const 131072) (i32.const RLEN) (i32.const 4096)
                     (i32.const 60000) (i32.const 4000))))
        """
        .replace("REQ", req.replace("\"", "\\\""))
        .replace("RLEN", Integer.toString(req.getBytes(StandardCharsets.UTF_8).length));
  }

  @Test
  void aProgramThatNeverReadsItsInputTimesOutOnTime() throws Exception {
    String grants =
        AbiTest.grants(AbiTest.NO_STORAGE, AbiTest.NO_KV, AbiTest.NO_NET, AbiTest.LOG)
            .replaceFirst(
                "}$", ",\"process\":{\"exec\":true,\"programs\":[\"sleep\"],\"max_processes\":1}}");
    HostServices services =
        HostServices.none().toBuilder().execTimeout(Duration.ofMillis(500)).build();
    try (Executor ex = new Executor(1, EnergyModel.estimate(10_000), 60_000, services)) {
      CompiledUnit compiled = AbiTest.COMPILER.compile(Wat2Wasm.parse(unit("sleep", 200_000)));
      long t0 = System.nanoTime();
      // 200 KB of input, more than a pipe holds, to a program that never reads it.
      ExecutionResult r =
          ex.execute(
              new UnitRequest(
                  "t", compiled, "run", Grants.parse(grants.getBytes(StandardCharsets.UTF_8))));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertEquals(AbiStatus.UNAVAILABLE, AbiTest.returned(r), r.outcome().toString());
      // The exec's timeout, not the run's wall limit (60 s) nor the program's 30 s, ended it.
      assertTrue(ms < 20_000, "the exec answered after " + ms + " ms");
    }
  }
}
