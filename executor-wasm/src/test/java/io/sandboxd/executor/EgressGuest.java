package io.sandboxd.executor;

import java.nio.charset.StandardCharsets;

/**
 * A guest that makes one {@code sandbox.egress} call, for the ABI and egress tests here and in the
 * integration tests (shared through this module's test-jar).
 */
public final class EgressGuest {
  private EgressGuest() {}

  /**
   * WAT whose {@code run} sends {@code requestJson} through {@code sandbox.egress}, logs the answer
   * and returns 0, or returns the call's status when it is not OK.
   */
  public static String logsAnswer(String requestJson) {
    String escaped = requestJson.replace("\\", "\\\\").replace("\"", "\\\"");
    return """
        (module
          (import "sandbox" "egress" (func $e (param i32 i32 i32 i32 i32) (result i32)))
          (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
          (memory 2)
          (data (i32.const 0) "REQ")
          (func (export "run") (result i32) (local $s i32)
            (local.set $s (call $e (i32.const 0) (i32.const RLEN) (i32.const 4096)
                                   (i32.const 60000) (i32.const 4000)))
            (if (i32.ne (local.get $s) (i32.const 0)) (then (return (local.get $s))))
            (drop (call $log (i32.const 4096) (i32.load (i32.const 4000))))
            (i32.const 0)))
        """
        .replace("REQ", escaped)
        .replace("RLEN", Integer.toString(requestJson.getBytes(StandardCharsets.UTF_8).length));
  }
}
