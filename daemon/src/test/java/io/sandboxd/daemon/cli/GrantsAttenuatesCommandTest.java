package io.sandboxd.daemon.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** `sandboxctl grants attenuates CHILD PARENT`: exit 0 / 1 naming the part / 2. */
class GrantsAttenuatesCommandTest extends FileInputs {

  @Test
  void narrowerExitsZero() throws Exception {
    Path child = write("c.json", "{\"storage\":{\"read\":[\"data/x\"]},\"host\":{\"clock\":true}}");
    Path parent =
        write("p.json", "{\"storage\":{\"read\":[\"data/**\"]},\"host\":{\"clock\":true}}");
    Console.Result r = Console.run("grants", "attenuates", child.toString(), parent.toString());
    assertEquals(0, r.exit(), r.stderr());
    assertEquals("", r.stderr());
  }

  @Test
  void widerExitsOneNamingTheFirstPart() throws Exception {
    Path child =
        write("c.json", "{\"process\":{\"exec\":true,\"programs\":[\"sh\"],\"max_processes\":1}}");
    Path parent = write("p.json", "{}");
    Console.Result r = Console.run("grants", "attenuates", child.toString(), parent.toString());
    assertEquals(1, r.exit());
    assertTrue(r.stderr().contains("$.process.exec"), r.stderr());
    // the reverse holds: the empty set is within anything
    Console.Result back = Console.run("grants", "attenuates", parent.toString(), child.toString());
    assertEquals(0, back.exit(), back.stderr());
  }

  @Test
  void stdinIsOneSide() throws Exception {
    Path parent = write("p.json", "{\"compute\":{\"cpu_time_ms\":10}}");
    Console.Result r =
        Console.runWithStdin(
            "{\"compute\":{\"cpu_time_ms\":11}}".getBytes(StandardCharsets.UTF_8),
            "grants",
            "attenuates",
            "-",
            parent.toString());
    assertEquals(1, r.exit());
    assertTrue(r.stderr().contains("$.compute.cpu_time_ms"), r.stderr());
  }

  @Test
  void badInputExitsTwo() throws Exception {
    Path ok = write("ok.json", "{}");
    Path bad = write("bad.json", "{\"storage\":{\"raed\":[]}}");
    Console.Result r = Console.run("grants", "attenuates", bad.toString(), ok.toString());
    assertEquals(2, r.exit());
    assertTrue(r.stderr().contains("$.storage"), r.stderr());
    assertEquals(
        2,
        Console.run("grants", "attenuates", ok.toString(), tmp.resolve("missing").toString())
            .exit());
    assertEquals(2, Console.run("grants", "attenuates", ok.toString()).exit());
    assertEquals(2, Console.run("grants", "attenuates", "-", "-").exit());
  }
}
