package io.sandboxd.executor;

import static io.sandboxd.executor.WasiGuestTest.assertLineIn;
import static io.sandboxd.executor.WasiGuestTest.out;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Outcome;
import io.sandboxd.enforcer.Grants;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A C guest run in an environment: {@code container_env} is its WASI environment, and a bind, a
 * volume and a tmpfs are preopened at their targets, brokered by the storage globs (WIRE.md Q18).
 */
class WasiEnvironmentTest {
  static CompiledUnit guest;

  /** The bind is read-only by the grant; the volume and the tmpfs are writable. */
  static final String STORAGE =
      "{\"read\":[\"data/**\",\"vol/**\",\"scratch/**\"],\"write\":[\"vol/**\",\"scratch/**\"],"
          + "\"delete\":[\"scratch/**\"]}";

  @BeforeAll
  static void build() {
    guest = WasiGuestTest.COMPILER.compile(WasiToolchain.build("wasi_env"));
  }

  static Grants grants() {
    return WasiGuestTest.grants(STORAGE, WasiGuestTest.LOG_ONLY);
  }

  @Test
  void theGuestSeesItsEnvironmentAndMounts(@TempDir Path tmp) throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    Path data = Files.createDirectories(tmp.resolve("srv/data"));
    Files.writeString(data.resolve("in.txt"), "bound from the host\n");
    Path storage = Files.createDirectories(tmp.resolve("storage"));
    EnvironmentMounts mounts = new EnvironmentMounts(state, List.of(data));
    UnitEnvironment env =
        new UnitEnvironment(
            "py",
            "cd".repeat(32),
            Map.of("LANG", "C.UTF-8", "APP_MODE", "test run"),
            List.of(
                new UnitEnvironment.Mount(data.toString(), "/data", UnitEnvironment.Kind.bind),
                new UnitEnvironment.Mount("cache", "/vol", UnitEnvironment.Kind.volume),
                new UnitEnvironment.Mount("", "/scratch", UnitEnvironment.Kind.tmpfs)));
    for (int n = 1; n <= 2; n++) {
      ExecutionResult r;
      try (EnvironmentMounts.Prepared p = mounts.prepare(env, "run" + n)) {
        r =
            WasiGuestTest.EXECUTOR.execute(
                new UnitRequest("run" + n, guest, "_start", grants())
                    .withStorageRoot(storage)
                    .withEnv(env.containerEnv())
                    .withMounts(p.dirs()));
      }
      String log = out(r);
      assertEquals(new Outcome.Completed(), r.outcome(), log);
      assertTrue(log.startsWith("env APP_MODE=test run\nenv LANG=C.UTF-8\nbind read:"), log);
      assertLineIn(log, "bind read: bound from the host");
      assertLineIn(log, "bind write: errno=" + WasiGuestTest.EACCES);
      assertLineIn(log, "volume count=" + n);
      assertLineIn(log, "tmpfs marker before=no\ntmpfs marker after=yes");
      assertLineIn(log, "rename across mounts: errno=" + Errno.XDEV);
      assertLineIn(log, "list /vol: count.txt");
      assertTrue(log.endsWith("done\n"), log);

      // Replay from the journal, in the same environment, touching none of the directories.
      List<MountedDir> named = mounts.named(env, "replay" + n);
      ExecutionResult replay =
          WasiGuestTest.EXECUTOR.execute(
              new UnitRequest("run" + n, guest, "_start", grants())
                  .withStorageRoot(storage)
                  .withEnv(env.containerEnv())
                  .withMounts(named)
                  .withReplay(new ReplaySource(r.journal(), r.journalBlobs())));
      assertEquals(r.outcome(), replay.outcome(), out(replay));
      assertEquals(r.journalRoot(), replay.journalRoot());
      assertTrue(replay.replayDivergence().isEmpty(), () -> replay.replayDivergence().toString());
      assertFalse(Files.exists(named.get(2).host()));
    }
    assertEquals("2\n", Files.readString(state.resolve("volumes/cache/count.txt")));
    assertFalse(Files.exists(data.resolve("out.txt")));
    try (var s = Files.list(state.resolve("tmpfs"))) {
      assertEquals(0, s.count(), "every tmpfs is gone");
    }
  }
}
