package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 22: the start-up cache. build-start-cache trains a class-data archive on a dry start of the
 * installed jar with the real JVM; the installed launcher passes it when it was made from that jar,
 * and the JVM then maps the daemon's classes from it. An archive of another jar, or one the JVM
 * cannot use, never stops the daemon from starting.
 */
class StartCacheTest {
  @TempDir Path tmp;

  /** A class the daemon loads before READY=1, as -Xlog:class+load reports it from the archive. */
  private static final String FROM_ARCHIVE =
      "io.sandboxd.daemon.Daemon source: shared objects file (top)";

  /** A class only a run loads (the module compiler), as loaded from the archive. */
  private static final String FROM_ARCHIVE_RUN_PATH =
      "com.dylibso.chicory.compiler.MachineFactoryCompiler source: shared objects file (top)";

  private ProcessRun run(Map<String, String> env, String... command)
      throws IOException, InterruptedException {
    return ProcessRun.of(tmp, env, List.of(command));
  }

  private Path root() {
    return tmp.resolve("root");
  }

  private Path lib() {
    return root().resolve("usr/lib/sandboxd");
  }

  private Path cache() {
    return tmp.resolve("cache");
  }

  private Map<String, String> env(String javaOpts) {
    Map<String, String> env = new HashMap<>();
    env.put("SANDBOXD_JAVA", Path.of(System.getProperty("java.home"), "bin", "java").toString());
    env.put("SANDBOXD_LIB", lib().toString());
    env.put("SANDBOXD_CACHE", cache().toString());
    env.put("SANDBOXD_JAVA_OPTS", javaOpts);
    return env;
  }

  private int starts;

  /**
   * A dry start's arguments: serve until READY=1 and the primer are done, then stop, with its state
   * and socket under {@code dir}.
   */
  static List<String> dryServe(Path dir) {
    return List.of(
        "serve",
        "--exit-when-ready",
        "--state",
        dir.resolve("state").toString(),
        "--socket",
        dir.resolve("run/sandboxd.sock").toString());
  }

  /** A dry start of the installed launcher on a fresh state directory; asserts it served. */
  private String dryStart() throws Exception {
    return dryStart("");
  }

  /** As above, with {@code javaOpts} added to the launcher's SANDBOXD_JAVA_OPTS. */
  private String dryStart(String javaOpts) throws Exception {
    return dryStart(Map.of(), javaOpts);
  }

  /** As above, with {@code extraEnv} (e.g. another SANDBOXD_JAVA) over the launcher's. */
  private String dryStart(Map<String, String> extraEnv, String javaOpts) throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("start-" + ++starts));
    Files.writeString(dir.resolve("sandboxd.json"), "{}");
    List<String> cmd = new ArrayList<>();
    cmd.add(lib().resolve("bin/sandboxd").toString());
    cmd.addAll(dryServe(dir));
    cmd.addAll(List.of("--config", dir.resolve("sandboxd.json").toString()));
    Map<String, String> env =
        env("-Xlog:class+load=info -Djna.tmpdir=" + dir.resolve("jna") + javaOpts);
    env.putAll(extraEnv);
    ProcessRun r = run(env, cmd.toArray(String[]::new));
    assertEquals(0, r.exit(), r.output());
    assertTrue(Files.exists(dir.resolve("state/runs.db")), r.output());
    return r.output();
  }

  /** The packaged jar and launchers staged under {@code root()} by install.sh. */
  private void stage() throws Exception {
    ProcessRun staged =
        run(
            Map.of("DESTDIR", root().toString()),
            "bash",
            DaemonProcess.ROOT.resolve("systemd/src/main/dist/install.sh").toString(),
            DaemonProcess.JAR.toAbsolutePath().toString());
    assertEquals(0, staged.exit(), staged.output());
  }

  @Test
  void theArchiveIsTrainedUsedWhenItMatchesAndNeverStopsAStart() throws Exception {
    stage();
    Path jar = lib().resolve("sandboxd.jar");

    ProcessRun built = run(env(""), lib().resolve("bin/build-start-cache").toString());
    assertEquals(0, built.exit(), built.output());
    Path archive = cache().resolve("sandboxd.jsa");
    assertTrue(Files.size(archive) > 1 << 20, "archive of " + Files.size(archive) + " bytes");
    String madeFrom = Files.readString(cache().resolve("made-from"));
    assertTrue(
        madeFrom.startsWith(
            jar
                + " "
                + Files.size(jar)
                + " "
                + Files.getLastModifiedTime(jar).toInstant().getEpochSecond()
                + ";"),
        madeFrom);
    assertTrue(madeFrom.contains("libjvm.so "), "the JVM it was made for: " + madeFrom);
    assertEquals(
        "rw-r--r--",
        java.nio.file.attribute.PosixFilePermissions.toString(
            Files.getPosixFilePermissions(archive)));

    // The SQLite driver's native library for this system, byte for byte as the jar holds it.
    String resource =
        org.sqlite.util.LibraryLoaderUtil.getNativeLibResourcePath()
            + "/"
            + org.sqlite.util.LibraryLoaderUtil.getNativeLibName();
    try (java.io.InputStream in = org.sqlite.JDBC.class.getResourceAsStream(resource)) {
      assertTrue(
          java.util.Arrays.equals(
              in.readAllBytes(), Files.readAllBytes(cache().resolve("libsqlitejdbc.so"))),
          resource);
    }

    // Matching: the daemon's classes come from the archive, and the driver loads its library
    // from the cache: with java.io.tmpdir unusable it could not extract it there.
    Path file = Files.writeString(tmp.resolve("a-file"), "");
    String noTmp =
        " -Djava.io.tmpdir="
            + file.resolve("tmp")
            + " -Dio.netty.native.workdir="
            + Files.createDirectories(tmp.resolve("netty"));
    String matching = dryStart(noTmp);
    assertTrue(matching.contains(FROM_ARCHIVE), "the archive was not used");
    // The dry start stops once the run path is primed, so the archive holds that path's classes
    // (the module compiler's among them), and priming needs no temporary directory.
    assertTrue(matching.contains(FROM_ARCHIVE_RUN_PATH), "the run path is not in the archive");
    assertTrue(matching.contains("run path primed in"), matching);

    // Its stamp matches but the JVM cannot use it (here: its header overwritten): the JVM checks
    // the archive itself and starts without it.
    try (FileChannel ch = FileChannel.open(archive, StandardOpenOption.WRITE)) {
      ch.write(java.nio.ByteBuffer.wrap(new byte[64]), 0);
    }
    String unusable = dryStart();
    assertFalse(unusable.contains(FROM_ARCHIVE), "a broken archive was used");

    // Rebuilt, then the jar reinstalled: the archive of the old jar is not even passed.
    assertEquals(0, run(env(""), lib().resolve("bin/build-start-cache").toString()).exit());
    Files.setLastModifiedTime(
        jar, FileTime.from(Files.getLastModifiedTime(jar).toInstant().plusSeconds(60)));
    String stale = dryStart();
    assertFalse(stale.contains(FROM_ARCHIVE), "an archive of another jar was used");
    assertTrue(stale.contains("was made for another jar or JVM; starting without it"), stale);
  }

  /** A JDK of feature version 25 or later under /usr/lib/jvm (this JVM's own first), if any. */
  static java.util.Optional<Path> jdk25() throws IOException {
    List<Path> homes = new ArrayList<>();
    homes.add(Path.of(System.getProperty("java.home")));
    Path jvms = Path.of("/usr/lib/jvm");
    if (Files.isDirectory(jvms)) {
      try (var list = Files.list(jvms)) {
        list.sorted().forEach(homes::add);
      }
    }
    for (Path home : homes) {
      Path release = home.resolve("release");
      if (Files.isReadable(release) && Files.isExecutable(home.resolve("bin/java"))) {
        var m =
            java.util.regex.Pattern.compile("(?m)^JAVA_VERSION=\"(\\d+)")
                .matcher(Files.readString(release));
        if (m.find() && Integer.parseInt(m.group(1)) >= 25) {
          return java.util.Optional.of(home.resolve("bin/java"));
        }
      }
    }
    return java.util.Optional.empty();
  }

  @Test
  void onJdk25TheCacheIsAnAotCacheTrainedUnderLoadAndUsed() throws Exception {
    java.util.Optional<Path> java25 = jdk25();
    org.junit.jupiter.api.Assumptions.assumeTrue(
        java25.isPresent(), "no JDK 25 or later under /usr/lib/jvm");
    stage();
    Map<String, String> env = env("");
    env.put("SANDBOXD_JAVA", java25.get().toString());
    Path scratch = Files.createDirectories(tmp.resolve("scratch"));
    env.put("TMPDIR", scratch.toString());
    // A class archive left from a JDK 17 training: the AOT cache replaces it.
    Files.createDirectories(cache());
    Files.write(cache().resolve("sandboxd.jsa"), new byte[] {1, 2, 3});

    ProcessRun built = run(env, lib().resolve("bin/build-start-cache").toString());
    assertEquals(0, built.exit(), built.output());
    assertTrue(built.output().contains("(a daemon under load, about 20 s)"), built.output());
    var trained =
        java.util.regex.Pattern.compile("trained on (\\d+) runs through its socket")
            .matcher(built.output());
    assertTrue(trained.find(), built.output());
    // 12 s of clients: thousands of runs here; a training without load would teach little.
    assertTrue(Integer.parseInt(trained.group(1)) > 500, built.output());
    Path aot = cache().resolve("sandboxd.aot");
    assertTrue(Files.size(aot) > 1 << 20, "AOT cache of " + Files.size(aot) + " bytes");
    assertFalse(Files.exists(cache().resolve("sandboxd.jsa")), "the old archive is still there");
    assertTrue(
        Files.readString(cache().resolve("made-from"))
            .contains(java25.get().getParent().getParent().toRealPath().toString()),
        "made for JDK 25");
    // Fits: --if-stale does nothing, says nothing.
    ProcessRun again = run(env, lib().resolve("bin/build-start-cache").toString(), "--if-stale");
    assertEquals(0, again.exit(), again.output());
    assertEquals("", again.output());
    // The training's scratch state, its training daemon and its clients are gone.
    try (var left = Files.list(scratch)) {
      assertEquals(List.of(), left.toList(), "scratch left behind");
    }

    // The launcher passes it, and the daemon's classes, the run path's among them, come from it.
    Map<String, String> on25 = Map.of("SANDBOXD_JAVA", java25.get().toString());
    String used = dryStart(on25, "");
    assertTrue(
        used.contains("io.sandboxd.daemon.Daemon source: shared objects file"),
        "the AOT cache was not used");
    assertTrue(
        used.contains("com.dylibso.chicory.compiler.MachineFactoryCompiler source: shared objects"),
        "the run path is not in the AOT cache");

    // One the JVM cannot use (its header overwritten) never stops a start.
    try (FileChannel ch = FileChannel.open(aot, StandardOpenOption.WRITE)) {
      ch.write(java.nio.ByteBuffer.wrap(new byte[64]), 0);
    }
    assertFalse(
        dryStart(on25, "").contains("io.sandboxd.daemon.Daemon source: shared objects file"),
        "a broken AOT cache was used");
  }
}
