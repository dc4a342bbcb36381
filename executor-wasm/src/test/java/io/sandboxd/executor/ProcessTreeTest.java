package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Exec cgroups a dead daemon left behind are killed and removed; live ones are left alone. A tree
 * gets the limits asked for under either confinement.
 */
class ProcessTreeTest {
  /** {@code script} run by sh as a tree in the temporary directory, files held to {@code limit}. */
  private static ProcessTree shell(String script, long limit, Optional<Path> parent)
      throws java.io.IOException {
    return ProcessTree.start(
        List.of("/bin/sh", "-c", script),
        Path.of(System.getProperty("java.io.tmpdir")),
        Map.of("PATH", "/usr/bin:/bin"),
        limit,
        TreeBounds.DEFAULT,
        List.of(),
        List.of(),
        parent);
  }

  /** A fresh PID namespace, and a cgroup where this machine delegates one to the test JVM. */
  private static List<Optional<Path>> confinements() {
    List<Optional<Path>> all = new ArrayList<>();
    all.add(Optional.empty());
    ProcessTree.cgroupParent().ifPresent(p -> all.add(Optional.of(p)));
    return all;
  }

  @Test
  void aTreeDumpsNoCoreAndWritesNoFileNorHoldsDataOrDescriptorsPastItsLimitsUnderEitherConfinement()
      throws Exception {
    Path cwd = Path.of(System.getProperty("java.io.tmpdir"));
    for (Optional<Path> parent : confinements()) {
      for (long limit : new long[] {0, 1000, 1 << 20, ProcessTree.NO_FILE_LIMIT}) {
        String seen;
        String script = "ulimit -c; ulimit -f; ulimit -d; ulimit -n; ulimit -n 1025 || echo held";
        try (ProcessTree tree = shell(script, limit, parent)) {
          Process p = tree.process();
          seen = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
          assertTrue(p.waitFor(10, TimeUnit.SECONDS));
        }
        String want = limit == ProcessTree.NO_FILE_LIMIT ? "unlimited" : "" + (limit / 512);
        long data = TreeBounds.DEFAULT.maxMemoryBytes() / 1024;
        assertEquals(
            "0\n" + want + "\n" + data + "\n1024\nheld\n", seen, parent + ", a limit of " + limit);
      }
    }
  }

  @Test
  void aCensusCountsEveryProcessOfTheTreeAndTheMemoryTheyHoldUnderEitherConfinement()
      throws Exception {
    // The shell, three sleepers and dd with a buffer of 24 MiB it has filled.
    String script =
        "for i in 1 2 3; do /bin/sleep 30 & done;"
            + " /bin/dd if=/dev/zero of=/dev/null bs=24M count=1000000";
    for (Optional<Path> parent : confinements()) {
      try (ProcessTree tree = shell(script, ProcessTree.NO_FILE_LIMIT, parent)) {
        ProcessTree.Census seen = tree.census(64);
        for (int i = 0; i < 500 && (seen.processes() < 5 || seen.memoryBytes() < 24 << 20); i++) {
          Thread.sleep(10);
          seen = tree.census(64);
        }
        assertEquals(5, seen.processes(), parent + ": " + seen);
        assertTrue(seen.memoryBytes() >= 24 << 20, parent + ": " + seen);
        assertTrue(seen.memoryBytes() < 64 << 20, parent + ": " + seen);
        // Past the bound the walk stops: one more than asked for is enough to say so.
        assertEquals(3, tree.census(2).processes(), parent.toString());
      }
    }
  }

  @Test
  void everyProcessOfATreeEvenADetachedOneIsKnownAsAnExecsAndNoOtherIs() throws Exception {
    // A duration no other process on the machine is likely to sleep.
    String secs = "30." + (System.nanoTime() % 100_000);
    for (Optional<Path> parent : confinements()) {
      try (ProcessTree tree =
          shell(
              "/usr/bin/setsid -f /bin/sleep " + secs + "; exec /bin/sleep " + secs,
              ProcessTree.NO_FILE_LIMIT,
              parent)) {
        List<Long> pids = List.of();
        for (int i = 0; i < 500 && pids.size() < 2; i++) {
          Thread.sleep(10);
          pids = sleepers(secs);
        }
        assertEquals(2, pids.size(), parent + ": " + pids);
        for (long pid : pids) {
          assertTrue(ExecLineage.startedByExec(pid), parent + ": pid " + pid);
        }
      }
    }
    assertFalse(ExecLineage.startedByExec(ProcessHandle.current().pid()));
    long notOurs = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(1L);
    assertFalse(ExecLineage.startedByExec(notOurs));
    assertFalse(ExecLineage.startedByExec(1));
  }

  /** The pids of the processes whose command line is {@code /bin/sleep secs}. */
  private static List<Long> sleepers(String secs) throws java.io.IOException {
    List<Long> out = new ArrayList<>();
    try (java.util.stream.Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : (Iterable<Path>) procs::iterator) {
        String name = p.getFileName().toString();
        try {
          if (name.chars().allMatch(Character::isDigit)
              && Files.readString(p.resolve("cmdline"), StandardCharsets.ISO_8859_1)
                  .equals("/bin/sleep\0" + secs + "\0")) {
            out.add(Long.parseLong(name));
          }
        } catch (java.io.IOException e) {
          // exited
        }
      }
    }
    return out;
  }

  @Test
  void aFloodIsHeldByTheKernelAtTheBoundUnderEitherConfinement() throws Exception {
    assumeTrue(
        PidsCgroupV1.parent().isPresent(), "this machine has no cgroup v1 pids hierarchy for us");
    // A duration no other process on the machine is likely to sleep.
    String secs = "30." + (System.nanoTime() % 100_000);
    // Python, unlike sh, goes on forking after a refused fork; it says how many forks it made.
    String flood =
        "import os, time\n"
            + "started = 0\n"
            + "for i in range(200):\n"
            + "    try:\n"
            + "        pid = os.fork()\n"
            + "    except OSError:\n"
            + "        continue\n"
            + "    if pid == 0:\n"
            + "        os.execv('/bin/sleep', ['/bin/sleep', '"
            + secs
            + "'])\n"
            + "    started += 1\n"
            + "print(started, flush=True)\n"
            + "time.sleep(30)\n";
    for (Optional<Path> parent : confinements()) {
      try (ProcessTree tree =
          ProcessTree.start(
              List.of("/usr/bin/python3", "-c", flood),
              Path.of(System.getProperty("java.io.tmpdir")),
              Map.of("PATH", "/usr/bin:/bin"),
              ProcessTree.NO_FILE_LIMIT,
              new TreeBounds(16, 512L << 20),
              List.of(),
              List.of(),
              parent)) {
        var out =
            new java.io.BufferedReader(
                new java.io.InputStreamReader(
                    tree.process().getInputStream(), StandardCharsets.UTF_8));
        // Python and 15 sleepers: the bound, and the kernel says it refused the rest.
        assertEquals("15", out.readLine(), parent + ": forks of 200 made");
        assertEquals(15, sleepers(secs).size(), parent.toString());
        assertEquals(16, tree.census(16).processes(), parent.toString());
        assertTrue(tree.tasksRefused(), parent.toString());
        Path dir = pidsCgroupOf(sleepers(secs).get(0));
        assertTrue(dir.getFileName().toString().startsWith(ProcessTree.CGROUP_PREFIX), "" + dir);
        assertEquals(
            String.valueOf(16 + (parent.isPresent() ? 0 : 1)),
            Files.readString(dir.resolve("pids.max")).trim(),
            parent + ": in a PID namespace, unshare's task is the tree's too");
        tree.close();
        assertFalse(Files.exists(dir), "the tree's pids cgroup is removed with it");
        assertEquals(List.of(), sleepers(secs), parent.toString());
      }
    }
  }

  @Test
  void aTreeThatMovesTheDaemonIntoItsCgroupCannotGetItKilledNorReachItsV1Cgroup() throws Exception {
    Optional<Path> parent = ProcessTree.cgroupParent();
    assumeTrue(parent.isPresent(), "this machine delegates no cgroup v2 to the test JVM");
    assumeTrue(Landlock.abi() >= 1, "without Landlock a tree writes what the daemon's user may");
    String own = v2Line(ProcessHandle.current().pid());
    // The tree's parent is this JVM (the daemon): it tries to move it into the tree's v2 cgroup,
    // through the file its own shell joined by, and into its v1 pids cgroup.
    String pidsDir = PidsCgroupV1.parent().map(p -> quoted(p.toString())).orElse("/nowhere");
    String script =
        "n=$(sed -n 's/^0:://p' /proc/self/cgroup);"
            + " echo $PPID > "
            + quoted(parent.get().toString())
            + "/${n##*/}/cgroup.procs && echo v2-moved;"
            + " p=$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup);"
            + " { echo $PPID > "
            + pidsDir
            + "/${p##*/}/cgroup.procs; } 2>/dev/null && echo v1-moved || echo v1-refused;"
            + " exec /bin/sleep 30";
    try (ProcessTree tree = shell(script, ProcessTree.NO_FILE_LIMIT, parent)) {
      var out =
          new java.io.BufferedReader(
              new java.io.InputStreamReader(
                  tree.process().getInputStream(), StandardCharsets.UTF_8));
      assertEquals("v2-moved", out.readLine());
      assertTrue(
          v2Line(ProcessHandle.current().pid()).contains(ProcessTree.CGROUP_PREFIX),
          "the tree moved the daemon into its cgroup");
      // The count sees it (TreeWatch stops the tree on it), and does not count it as the tree's.
      ProcessTree.Census seen = tree.census(64);
      assertTrue(seen.holdsDaemon());
      assertTrue(new TreeWatch(tree, TreeBounds.DEFAULT).passed().orElseThrow().contains("daemon"));
      assertEquals("v1-refused", out.readLine(), "the v1 cgroup is joined by the launching thread");
      tree.close();
      // Still here (killing the cgroup whole would have killed this JVM), and back where it was.
      assertEquals(own, v2Line(ProcessHandle.current().pid()));
      assertFalse(tree.process().isAlive());
    }
  }

  /** {@code s} as one sh word. */
  private static String quoted(String s) {
    return "'" + s.replace("'", "'\\''") + "'";
  }

  /** {@code pid}'s cgroup v2 line. */
  private static String v2Line(long pid) throws java.io.IOException {
    return Files.readAllLines(Path.of("/proc/" + pid + "/cgroup")).stream()
        .filter(l -> l.startsWith("0::"))
        .findFirst()
        .orElseThrow();
  }

  /** The directory of {@code pid}'s cgroup in the v1 pids hierarchy. */
  private static Path pidsCgroupOf(long pid) throws java.io.IOException {
    for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/cgroup"))) {
      String[] f = line.split(":", 3);
      if (List.of(f[1].split(",")).contains("pids")) {
        return PidsCgroupV1.parent().orElseThrow().resolve(f[2].substring(1));
      }
    }
    throw new AssertionError("pid " + pid + " is in no pids cgroup");
  }

  @Test
  void aDeadDaemonsExecTreeIsKilledAndItsCgroupRemoved() throws Exception {
    Optional<Path> parent = ProcessTree.cgroupParent();
    assumeTrue(parent.isPresent(), "this machine delegates no cgroup v2 to the test JVM");
    staleTreeKilledAndCgroupRemovedBelow(parent.get());
  }

  @Test
  void aDeadDaemonsExecTreeIsKilledAndItsV1PidsCgroupRemoved() throws Exception {
    Optional<Path> parent = PidsCgroupV1.parent();
    assumeTrue(parent.isPresent(), "this machine has no cgroup v1 pids hierarchy for us");
    staleTreeKilledAndCgroupRemovedBelow(parent.get());
  }

  /**
   * A cgroup below {@code parent} named for a daemon that has exited, holding a live process, is
   * emptied and removed by the sweep; one named for this process is left alone.
   */
  private static void staleTreeKilledAndCgroupRemovedBelow(Path parent) throws Exception {
    // A pid that has exited: the "daemon" that left the cgroup behind.
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    Path stale = parent.resolve("sandboxd-exec-" + gone.pid() + "-1");
    Path live = parent.resolve("sandboxd-exec-" + ProcessHandle.current().pid() + "-999999");
    Files.createDirectory(stale);
    Files.createDirectory(live);
    Process orphan =
        new ProcessBuilder(
                "/bin/sh", "-c", "echo $$ > \"$0\" && exec sleep 60", stale + "/cgroup.procs")
            .start();
    try {
      // Wait until the orphan has joined the stale cgroup.
      for (int i = 0; i < 200 && Files.readString(stale.resolve("cgroup.procs")).isBlank(); i++) {
        Thread.sleep(10);
      }
      assertFalse(Files.readString(stale.resolve("cgroup.procs")).isBlank());

      assertEquals(1, ProcessTree.sweepStale(parent));

      assertTrue(orphan.waitFor(5, TimeUnit.SECONDS), "the orphaned tree was killed");
      assertFalse(Files.exists(stale), "the stale cgroup was removed");
      assertTrue(Files.exists(live), "this daemon's own cgroups are left alone");
    } finally {
      orphan.destroyForcibly();
      orphan.waitFor(5, TimeUnit.SECONDS);
      Files.deleteIfExists(live);
      if (Files.exists(stale.resolve("cgroup.kill"))) {
        Files.writeString(stale.resolve("cgroup.kill"), "1");
      }
      ProcessTree.removeQuietly(stale);
    }
  }
}
