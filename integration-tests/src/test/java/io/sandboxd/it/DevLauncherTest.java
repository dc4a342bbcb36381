package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 22: the repository's bin/sandboxd (the README's first command) starts the daemon as the
 * installed service does, from a start-up cache trained on this jar and JVM: it trains one before a
 * {@code serve} whose cache does not fit, uses it afterwards without training again, and never lets
 * a missing or failed cache stop a start.
 */
class DevLauncherTest {
  @TempDir Path tmp;

  /** A class the daemon loads before READY=1, as -Xlog:class+load reports it from the archive. */
  private static final String FROM_ARCHIVE =
      "io.sandboxd.daemon.Daemon source: shared objects file (top)";

  private static final String TRAINING = "build-start-cache: training ";

  private int starts;

  /** bin/sandboxd with {@code env} added, then its arguments. */
  private ProcessRun launcher(Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(DaemonProcess.ROOT.resolve("bin/sandboxd").toAbsolutePath().toString());
    cmd.addAll(List.of(args));
    return ProcessRun.of(tmp, env, cmd);
  }

  /** The launcher's environment: this JVM, {@code cache} as the start-up cache, {@code more}. */
  private Map<String, String> env(Path cache, Map<String, String> more) {
    Map<String, String> env = new HashMap<>();
    // The JVM the launcher finds first on PATH is this test's, as the archive must be made by it.
    env.put(
        "PATH",
        Path.of(System.getProperty("java.home"), "bin") + ":" + System.getenv().get("PATH"));
    env.put("SANDBOXD_CACHE", cache.toString());
    env.put("SANDBOXD_JNA_TMP", tmp.resolve("jna").toString());
    env.put("SANDBOXD_JAVA_OPTS", "-Xlog:class+load=info");
    env.putAll(more);
    return env;
  }

  /** A dry start through bin/sandboxd on fresh state; asserts it served and stopped cleanly. */
  private String dryStart(Path cache, Map<String, String> more) throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("start-" + ++starts));
    List<String> args = new ArrayList<>(StartCacheTest.dryServe(dir));
    args.add("--dev");
    ProcessRun r = launcher(env(cache, more), args.toArray(String[]::new));
    assertEquals(0, r.exit(), r.output());
    assertTrue(Files.exists(dir.resolve("state/runs.db")), r.output());
    assertTrue(r.output().contains("sandboxd serving on"), r.output());
    return r.output();
  }

  @Test
  void serveTrainsTheCacheOnceThenStartsFromIt() throws Exception {
    Path cache = tmp.resolve("cache");
    String first = dryStart(cache, Map.of());
    assertTrue(first.contains(TRAINING + cache), first);
    assertTrue(first.contains(FROM_ARCHIVE), "the first start did not use what it trained");
    assertTrue(Files.size(cache.resolve("sandboxd.jsa")) > 1 << 20);
    String madeFrom = Files.readString(cache.resolve("made-from"));
    Path jar = DaemonProcess.ROOT.resolve("daemon/target/sandboxd.jar").toRealPath();
    assertTrue(madeFrom.startsWith(jar + " " + Files.size(jar) + " "), madeFrom);

    // It fits now: no training, and the classes still come from it.
    String second = dryStart(cache, Map.of());
    assertFalse(second.contains(TRAINING), second);
    assertTrue(second.contains(FROM_ARCHIVE), "the second start did not use the cache");

    // made-from of another jar (as after a rebuild): trained again before the start.
    Files.writeString(cache.resolve("made-from"), "/elsewhere/sandboxd.jar 1 1;\n");
    String rebuilt = dryStart(cache, Map.of());
    assertTrue(rebuilt.contains(TRAINING + cache), rebuilt);
    assertTrue(rebuilt.contains(FROM_ARCHIVE), "the retrained cache was not used");
    assertEquals(madeFrom, Files.readString(cache.resolve("made-from")));

    // Off: neither trained nor used, though it fits, and nothing said about it.
    String off = dryStart(cache, Map.of("SANDBOXD_START_CACHE", "off"));
    assertFalse(off.contains(TRAINING), off);
    assertFalse(off.contains(FROM_ARCHIVE), "SANDBOXD_START_CACHE=off used the cache");
    assertFalse(off.contains("start-up cache"), off);
  }

  @Test
  void aCacheThatCannotBeWrittenNeverStopsTheStart() throws Exception {
    // The cache's directory would have to be made under a plain file: the training fails.
    Path file = Files.writeString(tmp.resolve("a-file"), "");
    String out = dryStart(file.resolve("cache"), Map.of());
    assertTrue(out.contains(TRAINING), out);
    assertTrue(out.contains("sandboxd: no start-up cache (see above); starting without it"), out);
    assertFalse(out.contains(FROM_ARCHIVE), out);
  }

  @Test
  void otherCommandsNeitherTrainNorUseTheCache() throws Exception {
    Path cache = tmp.resolve("cache");
    ProcessRun help = launcher(env(cache, Map.of()), "--help");
    assertEquals(0, help.exit(), help.output());
    assertTrue(help.output().contains("serve"), help.output());
    assertFalse(help.output().contains(TRAINING), help.output());
    assertFalse(Files.exists(cache), "a --help trained a cache");
  }
}
