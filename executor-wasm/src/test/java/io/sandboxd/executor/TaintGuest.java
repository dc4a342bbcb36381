package io.sandboxd.executor;

/**
 * A guest importing both namespaces, for the taint tests here and in the integration tests (shared
 * through this module's test-jar): it reads a file through WASI, then asks {@code sandbox.egress}.
 */
public final class TaintGuest {
  private TaintGuest() {}

  /**
   * WAT whose {@code run} opens {@code path} for reading under the root descriptor, reads up to 64
   * bytes of it, then GETs {@code http://<endpoint>/out}: it returns egress's status, or 1000 + the
   * errno of a failed {@code path_open}, 2000 + that of a failed {@code fd_read}.
   */
  public static String readThenEgress(String path, String endpoint) {
    String req = "{\"method\":\"GET\",\"url\":\"http://" + endpoint + "/out\"}";
    return """
        (module
          (import "wasi_snapshot_preview1" "path_open"
            (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
          (import "wasi_snapshot_preview1" "fd_read"
            (func $read (param i32 i32 i32 i32) (result i32)))
          (import "sandbox" "egress" (func $egress (param i32 i32 i32 i32 i32) (result i32)))
          (memory 2)
          (data (i32.const 100) "PATH")
          (data (i32.const 200) "\\00\\04\\00\\00\\40\\00\\00\\00")
          (data (i32.const 2000) "REQ")
          (func (export "run") (result i32) (local $s i32)
            (local.set $s (call $open (i32.const 3) (i32.const 0) (i32.const 100) (i32.const PLEN)
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
        .replace("PLEN", Integer.toString(path.length()))
        .replace("PATH", path)
        .replace("REQ", req.replace("\"", "\\\""))
        .replace("QLEN", Integer.toString(req.length()));
  }

  /**
   * The grant JSON these guests run under: reads inbox/** and data/**, may reach {@code endpoint};
   * inbox/** is untrusted, opened to the sinks of the JSON array {@code open}.
   */
  public static String grants(String endpoint, String open) {
    return "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000000,\"cpu_time_ms\":5000,"
        + "\"memory_bytes\":1048576},"
        + "\"storage\":{\"read\":[\"inbox/**\",\"data/**\"],\"write\":[],\"delete\":[]},"
        + "\"network\":{\"outbound\":[\""
        + endpoint
        + "\"],\"inbound\":false},"
        + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
        + "\"host\":{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false},"
        + "\"flow\":{\"untrusted\":[\"storage:inbox/**\"],\"open\":"
        + open
        + "}}";
  }
}
