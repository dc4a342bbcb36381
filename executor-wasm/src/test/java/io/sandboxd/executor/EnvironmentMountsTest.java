package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How an environment's mounts become host directories, and what is refused. */
class EnvironmentMountsTest {
  static final String ADDR = "ab".repeat(32);

  static UnitEnvironment env(UnitEnvironment.Mount... mounts) {
    return new UnitEnvironment("test", ADDR, Map.of(), List.of(mounts));
  }

  /** What {@code mounts} says, refusing a bind of {@code source} at /data. */
  static MountException bindRefused(EnvironmentMounts mounts, String source) {
    return assertThrows(
        MountException.class,
        () ->
            mounts.check(
                env(new UnitEnvironment.Mount(source, "/data", UnitEnvironment.Kind.bind))));
  }

  @Test
  void bindVolumeAndTmpfsBecomeDirectories(@TempDir Path tmp) throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    Path allowed = Files.createDirectories(tmp.resolve("srv/data/sub"));
    EnvironmentMounts mounts = new EnvironmentMounts(state, List.of(tmp.resolve("srv/data")));
    UnitEnvironment e =
        env(
            new UnitEnvironment.Mount(allowed.toString(), "/data", UnitEnvironment.Kind.bind),
            new UnitEnvironment.Mount("cache", "/vol", UnitEnvironment.Kind.volume),
            new UnitEnvironment.Mount("", "/scratch", UnitEnvironment.Kind.tmpfs));
    mounts.check(e);
    Path scratch;
    try (EnvironmentMounts.Prepared p = mounts.prepare(e, "run1")) {
      List<MountedDir> dirs = p.dirs();
      assertEquals(allowed.toRealPath(), dirs.get(0).host());
      assertEquals(state.toRealPath().resolve("volumes/cache"), dirs.get(1).host());
      scratch = dirs.get(2).host();
      assertTrue(Files.isDirectory(scratch));
      Files.writeString(scratch.resolve("f"), "x");
      Files.writeString(dirs.get(1).host().resolve("kept"), "x");
    }
    assertFalse(Files.exists(scratch), "a tmpfs is removed after the run");
    assertTrue(Files.exists(state.resolve("volumes/cache/kept")), "a volume persists");
    // A replay names the same directories and makes none.
    List<MountedDir> named = mounts.named(e, "run2");
    assertEquals("/scratch", named.get(2).target());
    assertFalse(Files.exists(named.get(2).host()));
  }

  @Test
  void aBindOutsideBindAllowIsRefusedNamingTheMount(@TempDir Path tmp) throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    Files.createDirectories(tmp.resolve("srv/data"));
    Path other = Files.createDirectories(tmp.resolve("srv/other"));
    Files.createSymbolicLink(tmp.resolve("srv/data/escape"), other);
    EnvironmentMounts mounts = new EnvironmentMounts(state, List.of(tmp.resolve("srv/data")));
    MountException ex = bindRefused(mounts, other.toString());
    assertTrue(ex.getMessage().contains("mount /data: bind source " + other), ex.getMessage());
    assertTrue(ex.getMessage().contains("bind_allow"), ex.getMessage());
    // A link beneath an allowed directory is judged by where it leads.
    bindRefused(mounts, tmp.resolve("srv/data/escape").toString());
    bindRefused(mounts, "relative");
  }

  @Test
  void badVolumeNamesAndOverlappingBindAllowAreRefused(@TempDir Path tmp) throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    EnvironmentMounts mounts = new EnvironmentMounts(state, List.of());
    for (String name : List.of("../keys", "", "a/b", ".hidden", "x".repeat(200))) {
      MountException ex =
          assertThrows(
              MountException.class,
              () ->
                  mounts.check(
                      env(new UnitEnvironment.Mount(name, "/v", UnitEnvironment.Kind.volume))),
              name);
      assertTrue(ex.getMessage().contains("volume name"), ex.getMessage());
    }
    assertThrows(MountException.class, () -> new EnvironmentMounts(state, List.of(tmp)));
    assertThrows(
        MountException.class, () -> new EnvironmentMounts(state, List.of(state.resolve("keys"))));
    assertThrows(MountException.class, () -> new EnvironmentMounts(state, List.of(Path.of("rel"))));
  }

  @Test
  void targetsMustBeNormalAndDistinct() {
    for (String t : List.of("/", "data", "/a/../b", "/a//b", "/a/./b", "/a/")) {
      assertThrows(
          IllegalArgumentException.class,
          () -> new UnitEnvironment.Mount("x", t, UnitEnvironment.Kind.tmpfs),
          t);
    }
    assertThrows(
        IllegalArgumentException.class,
        () ->
            env(
                new UnitEnvironment.Mount("a", "/d", UnitEnvironment.Kind.tmpfs),
                new UnitEnvironment.Mount("b", "/d", UnitEnvironment.Kind.tmpfs)));
    assertThrows(
        IllegalArgumentException.class,
        () -> new UnitEnvironment("e", ADDR, Map.of("A=B", "x"), List.of()));
  }

  @Test
  void aTmpfsLeftByACrashIsRemovedAtStart(@TempDir Path tmp) throws Exception {
    Path state = Files.createDirectories(tmp.resolve("state"));
    Path left = Files.createDirectories(state.resolve("tmpfs/deadrun-0"));
    Files.writeString(left.resolve("f"), "x");
    new EnvironmentMounts(state, List.of());
    assertFalse(Files.exists(left));
  }
}
