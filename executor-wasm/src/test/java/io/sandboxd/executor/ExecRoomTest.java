package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an exec'd program may take, by attack class: one file past the module's quota (written,
 * preallocated or sparse), many files each under it, a disk down to the node's reserve, a flood of
 * processes, and memory in one process or spread over many. Real programs under the real
 * confinement; the unit sees QUOTA or a failed program, the module's count holds what the program
 * left, and the program never outlives the check that stopped it.
 */
class ExecRoomTest {
  @TempDir Path dir;

  private final ConcurrentLinkedQueue<String> told = new ConcurrentLinkedQueue<>();

  private static final long QUOTA = 1 << 20;

  /** A step of the unit: an exec call (its JSON request) or a storage write of zeros. */
  private sealed interface Step {}

  private record Exec(String program, String... args) implements Step {}

  private record Write(String path, int bytes) implements Step {}

  /**
   * A unit taking {@code steps} in order; after each it logs {@code s=C}, C the character 48 less
   * the status (so {@code s=0} is OK and {@code s=:} QUOTA), then an allowed exec's JSON answer.
   */
  private static String unit(Step... steps) {
    StringBuilder data = new StringBuilder();
    StringBuilder body = new StringBuilder();
    for (int i = 0; i < steps.length; i++) {
      int off = 8192 + i * 1024;
      String text;
      String call;
      if (steps[i] instanceof Exec e) {
        StringBuilder req = new StringBuilder("{\"program\":\"" + e.program() + "\",\"args\":[");
        for (int a = 0; a < e.args().length; a++) {
          req.append(a == 0 ? "" : ",").append('"').append(e.args()[a]).append('"');
        }
        text = req.append("]}").toString();
        call =
            "(call $e (i32.const "
                + off
                + ") (i32.const "
                + text.length()
                + ") (i32.const 32768) (i32.const 60000) (i32.const 4000))";
      } else {
        Write w = (Write) steps[i];
        text = w.path();
        call =
            "(call $w (i32.const "
                + off
                + ") (i32.const "
                + text.length()
                + ") (i64.const 0) (i32.const 131072) (i32.const "
                + w.bytes()
                + "))";
      }
      data.append("(data (i32.const ")
          .append(off)
          .append(") \"")
          .append(text.replace("\\", "\\\\").replace("\"", "\\\""))
          .append("\")\n");
      body.append("(local.set $s ")
          .append(call)
          .append(")\n")
          .append("(i32.store8 (i32.const 4010) (i32.sub (i32.const 48) (local.get $s)))\n")
          .append("(drop (call $log (i32.const 4008) (i32.const 3)))\n");
      if (steps[i] instanceof Exec) {
        body.append(
            "(if (i32.eqz (local.get $s)) (then (drop (call $log (i32.const 32768)"
                + " (i32.load (i32.const 4000))))))\n");
      }
    }
    return "(module\n"
        + "(import \"sandbox\" \"exec\" (func $e (param i32 i32 i32 i32 i32) (result i32)))\n"
        + "(import \"sandbox\" \"storage_write\" (func $w (param i32 i32 i64 i32 i32) (result i32)))\n"
        + "(import \"sandbox\" \"log\" (func $log (param i32 i32) (result i32)))\n"
        + "(memory 24)\n"
        + "(data (i32.const 4008) \"s=\")\n"
        + data
        + "(func (export \"run\") (result i32) (local $s i32)\n"
        + body
        + "(i32.const 0)))";
  }

  private static String grants(String... programs) {
    String storage = "{\"read\":[\"**\"],\"write\":[\"**\"],\"delete\":[]}";
    StringBuilder names = new StringBuilder();
    for (String p : programs) {
      names.append(names.length() == 0 ? "" : ",").append('"').append(p).append('"');
    }
    return AbiTest.grants(storage, AbiTest.NO_KV, AbiTest.NO_NET, AbiTest.LOG)
        .replace("\"memory_bytes\":1048576", "\"memory_bytes\":2097152")
        .replaceFirst(
            "}$", ",\"process\":{\"exec\":true,\"programs\":[" + names + "],\"max_processes\":1}}");
  }

  private Executor executor(DiskReserve reserve) {
    return executor(reserve, TreeBounds.DEFAULT);
  }

  private Executor executor(DiskReserve reserve, TreeBounds tree) {
    return new Executor(
        1,
        EnergyModel.estimate(10_000),
        60_000,
        HostServices.none().toBuilder()
            .quotas(QUOTA, HostServices.DEFAULT_KV_QUOTA)
            .reserve(reserve)
            .execTimeout(Duration.ofSeconds(30))
            .execTree(tree)
            .faults((call, what) -> told.add(call + ": " + what))
            .build());
  }

  /** The status of each step, and the answers of the execs allowed. */
  private record Seen(List<Integer> statuses, List<JsonNode> answers, String log) {
    static Seen of(ExecutionResult r) {
      List<Integer> statuses = new ArrayList<>();
      List<JsonNode> answers = new ArrayList<>();
      for (String line : r.log().split("\n")) {
        if (line.startsWith("s=") && line.length() == 3) {
          statuses.add(48 - line.charAt(2));
        } else if (line.startsWith("{")) {
          answers.add(CanonicalJson.parse(line));
        }
      }
      return new Seen(statuses, answers, r.log());
    }

    String stderr(int i) {
      return new String(
          Base64.getDecoder().decode(answers.get(i).get("stderr").asText()),
          StandardCharsets.UTF_8);
    }
  }

  private Seen run(Executor ex, Path storage, Step... steps) {
    return Seen.of(AbiTest.run(ex, unit(steps), grants(programs(steps)), storage));
  }

  /**
   * Runs {@code sh NAME} for each script (name, text) written into {@code storage} first: a shell
   * runs an inline command only by its own hash, so each script is allowed by its BLAKE3.
   */
  private Seen runScripts(Executor ex, Path storage, String... nameAndText) throws IOException {
    List<String> allowed = new ArrayList<>(List.of("sh"));
    List<Step> steps = new ArrayList<>();
    for (int i = 0; i < nameAndText.length; i += 2) {
      byte[] text = nameAndText[i + 1].getBytes(StandardCharsets.UTF_8);
      Files.write(storage.resolve(nameAndText[i]), text);
      allowed.add("b3:" + io.sandboxd.attest.Blake3.hex(text));
      steps.add(new Exec("sh", nameAndText[i]));
    }
    Step[] all = steps.toArray(Step[]::new);
    return Seen.of(AbiTest.run(ex, unit(all), grants(allowed.toArray(String[]::new)), storage));
  }

  private static String[] programs(Step... steps) {
    return Stream.of(steps)
        .filter(s -> s instanceof Exec)
        .map(s -> ((Exec) s).program())
        .distinct()
        .toArray(String[]::new);
  }

  private static long usage(Path root) throws IOException {
    return StorageRoot.usage(root);
  }

  @Test
  void oneFileStopsAtTheModulesRoomHoweverItIsMade() throws Exception {
    // Each way a program can make one large file: write it, preallocate it, or make it sparse.
    List<Exec> ways =
        List.of(
            new Exec("dd", "if=/dev/zero", "of=big", "bs=65536", "count=1024"),
            new Exec("fallocate", "-l", "67108864", "big"),
            new Exec("truncate", "-s", "1T", "big"));
    try (Executor ex = executor(DiskReserve.NONE)) {
      for (Exec way : ways) {
        Path root = Files.createDirectories(dir.resolve(way.program()));
        // The first write counts the module; the program's file may then take only what is left.
        Seen seen = run(ex, root, new Write("first", 1000), way, new Write("after", 100_000));
        assertEquals(0, seen.statuses().get(0), seen.log());
        assertEquals(0, seen.statuses().get(1), "the exec itself is allowed: " + seen.log());
        JsonNode answer = seen.answers().get(0);
        assertTrue(
            answer.get("exit").asInt() != 0, way.program() + " succeeded: " + seen.stderr(0));
        long big = Files.size(root.resolve("big"));
        assertTrue(
            big <= QUOTA - 1000 - StorageLedger.ENTRY_BYTES,
            way.program() + " left " + big + " bytes");
        if (way.program().equals("dd")) {
          // dd filled the room: without the count walked again after the exec, the run's own
          // write would pass the quota.
          assertEquals(
              AbiStatus.QUOTA,
              (int) seen.statuses().get(2),
              "a write after the program filled the room: " + seen.log());
        }
        assertTrue(
            usage(root) <= QUOTA + StorageLedger.ENTRY_BYTES, way.program() + ": " + usage(root));
      }
    }
  }

  @Test
  void manyFilesEachUnderTheLimitAreStoppedAtTheQuota() throws Exception {
    Path root = Files.createDirectories(dir.resolve("split"));
    try (Executor ex = executor(DiskReserve.NONE)) {
      long t0 = System.nanoTime();
      // Left alone, split writes 456,976 files of 4 KiB from a stream that never ends.
      Seen seen =
          run(
              ex,
              root,
              new Exec("split", "-b", "4096", "-a", "4", "/dev/zero", "part"),
              new Write("after", 10));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertEquals(List.of(AbiStatus.QUOTA, AbiStatus.QUOTA), seen.statuses(), seen.log());
      assertTrue(ms < 20_000, "stopped after " + ms + " ms, not at the first check");
      long files;
      try (Stream<Path> s = Files.list(root)) {
        files = s.count();
      }
      long held = usage(root);
      assertTrue(held > QUOTA, "split stopped before the quota: " + held);
      assertTrue(files < 456_976, "split ran to its end: " + files + " files");
      // Nothing of the tree writes on once the exec has answered.
      Thread.sleep(300);
      assertEquals(held, usage(root), "the stopped program kept writing");
    }
  }

  @Test
  void aDiskDownToTheNodesReserveStopsTheProgram() throws Exception {
    // A file system of 1 GiB with 64 MiB free before the program writes: 50 MiB are kept (5%).
    // What is taken is what the exec images hold, the program's copy and its working directory.
    long free = 64L << 20;
    DiskReserve.Room room =
        DiskReserveTest.room(
            1L << 30,
            at -> {
              try (java.util.stream.Stream<Path> images =
                  Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
                long taken = 0;
                for (Path image :
                    images
                        .filter(p -> p.getFileName().toString().startsWith("sandboxd-exec-"))
                        .toList()) {
                  taken += usage(image);
                }
                return free - taken;
              } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
              }
            });
    try (Executor ex = executor(new DiskReserve(-1, room, (call, what) -> {}))) {
      Seen seen =
          run(
              ex,
              null,
              new Exec("dd", "if=/dev/zero", "of=big", "bs=65536", "count=1024"),
              new Exec("split", "-b", "4096", "-a", "4", "/dev/zero", "part"));
      assertEquals(0, seen.statuses().get(0), seen.log());
      assertTrue(seen.answers().get(0).get("exit").asInt() != 0, seen.stderr(0));
      assertEquals(AbiStatus.QUOTA, (int) seen.statuses().get(1), seen.log());
      assertTrue(
          told.stream().anyMatch(t -> t.startsWith("exec: ") && t.contains("reserve_bytes")),
          "the operator was not told: " + told);
    }
  }

  @Test
  void aProgramWhoseCopyWouldTakeTheNodesReserveIsNotStarted() throws Exception {
    // 1,000 bytes above the reserve: no program's copy fits, so none is made and none runs.
    long free = 64L << 20;
    DiskReserve.Room room = DiskReserveTest.room(1L << 30, free);
    try (Executor ex =
        executor(new DiskReserve(free - 1000, room, (call, w) -> told.add(call + ": " + w)))) {
      Seen seen = run(ex, null, new Exec("dd", "if=/dev/zero", "of=big", "bs=1", "count=1"));
      assertEquals(AbiStatus.QUOTA, (int) seen.statuses().get(0), seen.log());
      assertTrue(
          told.stream().anyMatch(t -> t.startsWith("exec: refused a unit's write of ")),
          "the operator was not told: " + told);
    }
  }

  /**
   * Runs two scripts in a fresh storage directory {@code name}: the first runs (OK), the second is
   * stopped (QUOTA) well before the exec's timeout, at the first counts of its tree.
   */
  private Seen firstRunsSecondStopped(Executor ex, String name, String first, String second)
      throws IOException {
    long t0 = System.nanoTime();
    Seen seen =
        runScripts(
            ex, Files.createDirectories(dir.resolve(name)), "one.sh", first, "two.sh", second);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertEquals(List.of(AbiStatus.OK, AbiStatus.QUOTA), seen.statuses(), seen.log());
    assertTrue(ms < 20_000, "stopped after " + ms + " ms, not at the first count");
    return seen;
  }

  /** Processes whose command line is {@code /bin/sleep seconds}: what a flood left running. */
  private static long sleepers(String seconds) throws IOException {
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      return procs
          .filter(p -> p.getFileName().toString().chars().allMatch(Character::isDigit))
          .filter(
              p -> {
                try {
                  return Files.readString(p.resolve("cmdline"), StandardCharsets.ISO_8859_1)
                      .equals("/bin/sleep\0" + seconds + "\0");
                } catch (IOException e) {
                  return false; // exited
                }
              })
          .count();
    }
  }

  /** Waits up to 5 s for the sleepers of {@code seconds} to be gone; how many are left. */
  private static long sleepersAfterKill(String seconds) throws Exception {
    long left = sleepers(seconds);
    for (int i = 0; i < 100 && left > 0; i++) {
      Thread.sleep(50);
      left = sleepers(seconds);
    }
    return left;
  }

  @Test
  void aFloodOfProcessesIsStoppedAtTheNodesBoundAndLeavesNothingRunning() throws Exception {
    // Left alone, the script starts 2,000 sleepers; the node lets a tree hold 16 processes.
    String script = "i=0; while [ $i -lt 2000 ]; do /bin/sleep 987 & i=$((i+1)); done; wait";
    try (Executor ex = executor(DiskReserve.NONE, new TreeBounds(16, 512L << 20))) {
      Seen seen = firstRunsSecondStopped(ex, "flood", "/bin/echo one | /bin/cat", script);
      assertEquals(0, seen.answers().get(0).get("exit").asInt(), "a pipeline under the bound");
      assertEquals(0, sleepersAfterKill("987"), "the flood outlived the exec");
      assertTrue(
          told.stream()
              .anyMatch(
                  t ->
                      t.startsWith(
                          "exec: stopped a unit's exec'd program: its tree held more than 16")),
          "the operator was not told: " + told);
    }
  }

  @Test
  void memoryIsBoundedInEachProcessByTheKernelAndAcrossTheTreeByTheCount() throws Exception {
    // 64 MiB for the tree: dd's buffer of 100 MiB is refused by the kernel (RLIMIT_DATA), and four
    // buffers of 40 MiB, each under the bound, are stopped together at the count.
    String four =
        "for i in 1 2 3 4; do /bin/dd if=/dev/zero of=/dev/null bs=40M count=100000 & done; wait";
    try (Executor ex = executor(DiskReserve.NONE, new TreeBounds(64, 64L << 20))) {
      Seen seen =
          firstRunsSecondStopped(
              ex, "memory", "/bin/dd if=/dev/zero of=/dev/null bs=100M count=1", four);
      assertTrue(seen.answers().get(0).get("exit").asInt() != 0, "dd held 100 MiB");
      assertTrue(seen.stderr(0).contains("memory exhausted"), seen.stderr(0));
      assertTrue(
          told.stream().anyMatch(t -> t.contains("bytes of memory, more than 67108864")),
          "the operator was not told: " + told);
    }
  }
}
