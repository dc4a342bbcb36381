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
  @Test
  void aTreeDumpsNoCoreAndWritesNoFilePastItsLimitUnderEitherConfinement() throws Exception {
    List<Optional<Path>> confinements = new ArrayList<>();
    confinements.add(Optional.empty()); // a fresh PID namespace
    ProcessTree.cgroupParent().ifPresent(p -> confinements.add(Optional.of(p)));
    Path cwd = Path.of(System.getProperty("java.io.tmpdir"));
    for (Optional<Path> parent : confinements) {
      for (long limit : new long[] {0, 1000, 1 << 20, ProcessTree.NO_FILE_LIMIT}) {
        String seen;
        try (ProcessTree tree =
            ProcessTree.start(
                List.of("/bin/sh", "-c", "ulimit -c; ulimit -f"),
                cwd,
                Map.of("PATH", "/usr/bin:/bin"),
                limit,
                parent)) {
          Process p = tree.process();
          seen = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
          assertTrue(p.waitFor(10, TimeUnit.SECONDS));
        }
        String want = limit == ProcessTree.NO_FILE_LIMIT ? "unlimited" : "" + (limit / 512);
        assertEquals("0\n" + want + "\n", seen, parent + ", a limit of " + limit);
      }
    }
  }

  @Test
  void aDeadDaemonsExecTreeIsKilledAndItsCgroupRemoved() throws Exception {
    Optional<Path> parent = ProcessTree.cgroupParent();
    assumeTrue(parent.isPresent(), "this machine delegates no cgroup v2 to the test JVM");
    // A pid that has exited: the "daemon" that left the cgroup behind.
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    Path stale = parent.get().resolve("sandboxd-exec-" + gone.pid() + "-1");
    Path live = parent.get().resolve("sandboxd-exec-" + ProcessHandle.current().pid() + "-999999");
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

      assertEquals(1, ProcessTree.sweepStale(parent.get()));

      assertTrue(orphan.waitFor(5, TimeUnit.SECONDS), "the orphaned tree was killed");
      assertFalse(Files.exists(stale), "the stale cgroup was removed");
      assertTrue(Files.exists(live), "this daemon's own cgroups are left alone");
    } finally {
      orphan.destroyForcibly();
      Files.deleteIfExists(live);
      if (Files.exists(stale)) {
        Files.writeString(stale.resolve("cgroup.kill"), "1");
      }
    }
  }
}
