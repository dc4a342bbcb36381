package io.sandboxd.daemon.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.daemon.Daemon;
import io.sandboxd.daemon.DaemonPaths;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** sandboxctl run against a daemon in this JVM: 0 completed, 3 another outcome, 2 refused. */
class RunCommandTest {
  static final String UNIT =
      """
      (module
        (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
        (memory (export "memory") 1)
        (data (i32.const 0) "hi")
        (func (export "run") (result i32)
          (drop (call $log (i32.const 0) (i32.const 2)))
          (i32.const 0)))
      """;

  @TempDir Path tmp;
  Daemon daemon;
  Path socket;
  Path module;

  @BeforeEach
  void start() throws Exception {
    DaemonPaths paths = DaemonPaths.resolve(false, tmp.resolve("state"), tmp.resolve("d.sock"));
    daemon = Daemon.start(paths, new Daemon.Settings(2, 10_000, 60_000, 16 << 20));
    socket = paths.socket();
    module = tmp.resolve("unit.wasm");
    Files.write(module, Wat2Wasm.parse(UNIT));
  }

  @AfterEach
  void stop() throws Exception {
    daemon.close();
  }

  private Path grants(String devices) throws Exception {
    Path g = tmp.resolve("grants-" + devices.length() + ".json");
    Files.writeString(
        g,
        "{\"compute\":{\"devices\":"
            + devices
            + ",\"energy_budget_uj\":1000000000,\"cpu_time_ms\":5000,\"memory_bytes\":1048576},"
            + "\"host\":{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}}",
        StandardCharsets.UTF_8);
    return g;
  }

  private Console.Result run(Path grants) {
    return Console.run(
        "run", module.toString(), "--grants", grants.toString(), "--socket", socket.toString());
  }

  @Test
  void completedRunExitsZeroAndIsListed() throws Exception {
    Console.Result r = run(grants("[]"));
    assertEquals(0, r.exit(), r.stderr());
    assertTrue(r.stderr().contains("Completed"), r.stderr());
    assertEquals("", r.out(), "the unit wrote nothing to stdout");
    Console.Result list = Console.run("runs", "list", "--socket", socket.toString());
    assertEquals(0, list.exit(), list.stderr());
    assertEquals(2, list.out().lines().count(), "a header and one run:\n" + list.out());
  }

  @Test
  void declinedRunExitsThree() throws Exception {
    Console.Result r = run(grants("[\"Gpu\"]"));
    assertEquals(3, r.exit(), r.out() + r.stderr());
    assertTrue((r.out() + r.stderr()).contains("Declined"), r.out() + r.stderr());
  }

  @Test
  void refusedSubmissionExitsTwoNamingTheField() throws Exception {
    Path bad = tmp.resolve("bad.json");
    Files.writeString(bad, "{\"compute\":{\"cpu_time_ms\":\"lots\"}}", StandardCharsets.UTF_8);
    Console.Result r = run(bad);
    assertEquals(2, r.exit(), r.out());
    assertTrue(r.stderr().contains("$.compute.cpu_time_ms"), r.stderr());
    Console.Result list = Console.run("runs", "list", "--socket", socket.toString());
    assertEquals(
        1, list.out().lines().count(), "nothing recorded, only the header:\n" + list.out());
  }
}
