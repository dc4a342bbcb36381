package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.Outcome;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * WASI preview 1 guests written in C and built with clang-16 during the test: each prints what its
 * calls returned, so their stdout and stderr are the evidence of what the guest saw.
 */
class WasiGuestTest {
  /** What the guest wrote: stdout, then stderr. */
  static String out(ExecutionResult r) {
    ExecutionResult.Stdio io = r.stdio().orElseThrow();
    return new String(io.stdout().bytes(), StandardCharsets.UTF_8)
        + new String(io.stderr().bytes(), StandardCharsets.UTF_8);
  }

  static final Executor EXECUTOR = new Executor(2, EnergyModel.estimate(10_000), 60_000);
  static final UnitCompiler COMPILER = new UnitCompiler(16);
  static CompiledUnit files;
  static CompiledUnit escape;
  static CompiledUnit clockRandom;

  // WASI errno values as the guest prints them (wasi-libc uses them as its errno values).
  static final int EACCES = 2;
  static final int ENOTCAPABLE = 76;
  static final int EPERM = 63;

  static final String SECRET = "TOP SECRET outside the storage root\n";

  @BeforeAll
  static void build() {
    files = COMPILER.compile(WasiToolchain.build("wasi_files"));
    escape = COMPILER.compile(WasiToolchain.build("wasi_escape"));
    clockRandom = COMPILER.compile(WasiToolchain.build("wasi_clock_random"));
  }

  @AfterAll
  static void close() {
    EXECUTOR.close();
  }

  static Grants grants(String storage, String host) {
    return ExecutorTest.grants(storage, host, 20_000, 67_108_864, 1_000_000_000_000L);
  }

  /** notes/ is the unit's to read, write and delete; ro.txt only to read; nothing else. */
  static final String STORAGE =
      "{\"read\":[\"notes/**\",\"ro.txt\"],\"write\":[\"notes/**\"],\"delete\":[\"notes/**\"]}";

  static final String LOG_ONLY =
      "{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}";
  static final String ALL_HOST =
      "{\"logging\":true,\"clock\":true,\"random\":true,\"inference\":false}";

  /** A storage root beside a directory it must not reach, with the files the guests look for. */
  static Path layout(Path tmp) throws Exception {
    Path outside = Files.createDirectories(tmp.resolve("outside"));
    Files.writeString(outside.resolve("secret.txt"), SECRET);
    Path root = Files.createDirectories(tmp.resolve("root"));
    Files.createDirectories(root.resolve("notes"));
    Files.writeString(root.resolve("notes/seed.txt"), "seed\n");
    Files.writeString(root.resolve("ro.txt"), "read-only\n");
    Files.writeString(root.resolve("hidden.txt"), "no glob grants this\n");
    Files.createSymbolicLink(root.resolve("notes/escape"), outside.resolve("secret.txt"));
    Files.createSymbolicLink(root.resolve("notes/outdir"), outside);
    return root;
  }

  static ExecutionResult run(CompiledUnit unit, Grants g, Path root, Map<String, String> env) {
    UnitRequest req = new UnitRequest("wasi", unit, "_start", g).withEnv(env);
    return EXECUTOR.execute(root == null ? req : req.withStorageRoot(root));
  }

  @Test
  void filesAreWrittenReadListedAndStdoutIsLogged(@TempDir Path tmp) throws Exception {
    Path root = layout(tmp);
    ExecutionResult r =
        run(files, grants(STORAGE, LOG_ONLY), root, Map.of("GREETING", "hello from the request"));
    String log = out(r);
    assertEquals(new Outcome.Completed(), r.outcome(), log);
    assertEquals("written by a wasi guest\n", Files.readString(root.resolve("notes/hello.txt")));
    assertTrue(Files.isDirectory(root.resolve("notes/sub")));
    assertTrue(
        log.contains("argc=1 argv0=" + files.address() + " greeting=hello from the request\n"),
        log);
    assertLineIn(log, "read back: written by a wasi guest");
    // The listing shows what some glob covers, sorted; hidden.txt is covered by none.
    assertTrue(
        log.contains(
            "notes: escape\nnotes: hello.txt\nnotes: outdir\nnotes: seed.txt\nnotes: sub\n"),
        log);
    assertLineIn(log, "root: notes\nroot: ro.txt");
    assertFalse(log.contains("hidden.txt"), log);
    // Without host.clock even file times read as the normalized constant.
    assertLineIn(log, "size=24 mtime=" + Executor.CLOCK_CONSTANT_MS / 1000);
    assertTrue(log.endsWith("done\n"), "stderr is captured too: " + log);
  }

  @Test
  void escapesAndUngrantedPathsFailInsideTheGuest(@TempDir Path tmp) throws Exception {
    Path root = layout(tmp);
    Path secret = tmp.resolve("outside/secret.txt");
    FileTime before = Files.getLastModifiedTime(secret);
    ExecutionResult r = run(escape, grants(STORAGE, LOG_ONLY), root, Map.of());
    String log = out(r);
    assertEquals(new Outcome.Completed(), r.outcome(), log);

    assertLineIn(log, "dotdot: errno=" + ENOTCAPABLE);
    // The guest's "/" is its storage root: /etc/passwd names root/etc/passwd, which no glob grants.
    assertLineIn(log, "absolute: errno=" + EACCES);
    // Granted by notes/**, but the link leads out of the root: refused whatever the globs say.
    assertLineIn(log, "symlink: errno=" + ENOTCAPABLE);
    assertLineIn(log, "symlink-dir: errno=" + ENOTCAPABLE);
    assertLineIn(log, "write-read-only: errno=" + EACCES);
    assertLineIn(log, "append-read-only: errno=" + EACCES);
    assertLineIn(log, "read-ungranted: errno=" + EACCES);
    assertLineIn(log, "raw-dotdot: wasi=" + ENOTCAPABLE);
    assertLineIn(log, "raw-absolute: wasi=" + ENOTCAPABLE);
    assertLineIn(log, "raw-inner-dotdot: wasi=" + ENOTCAPABLE);
    assertLineIn(log, "raw-symlink: wasi=" + ENOTCAPABLE);
    assertLineIn(log, "unlink-read-only: -1 errno=" + EACCES);
    // Deleting the planted link itself is inside the grant, and removes only the link.
    assertLineIn(log, "unlink-escape-link: 0 errno=0");
    assertLineIn(log, "rename-out: -1 errno=" + EACCES);
    // Symlinks are never made: a link is a path no grant decided.
    assertLineIn(log, "symlink-make: -1 errno=" + EPERM);
    assertTrue(log.contains("granted: OPENED read=10 [read-only\n]"), log);

    assertFalse(log.contains("TOP SECRET"), log);
    assertFalse(log.contains("root:x:"), log);
    assertEquals(SECRET, Files.readString(secret));
    assertEquals(before, Files.getLastModifiedTime(secret));
    assertEquals("read-only\n", Files.readString(root.resolve("ro.txt")));
    assertEquals("no glob grants this\n", Files.readString(root.resolve("hidden.txt")));
    assertTrue(Files.exists(root.resolve("notes/seed.txt")));
    assertFalse(Files.exists(root.resolve("hidden2.txt")));
    assertFalse(
        Files.exists(root.resolve("notes/escape"), java.nio.file.LinkOption.NOFOLLOW_LINKS));
  }

  @Test
  void clockNotGrantedIsTheConstantAndRandomDeniedIsAnErrno() {
    ExecutionResult r = run(clockRandom, grants(NO_STORAGE, LOG_ONLY), null, Map.of());
    String log = out(r);
    assertEquals(new Outcome.Completed(), r.outcome(), log);
    assertLineIn(log, "realtime=0.000000000\nmonotonic=0.000000000");
    assertLineIn(log, "getentropy=-1 errno=" + EACCES);
    assertLineIn(log, "random_get=" + EACCES);
    // Refusals by the grant follow from the grants, which a replay has: none is journaled.
    assertEquals(List.of(), r.journal());
  }

  @Test
  void grantedClockAndRandomAreLiveAndJournaled() {
    ExecutionResult r = run(clockRandom, grants(NO_STORAGE, ALL_HOST), null, Map.of());
    String log = out(r);
    assertEquals(new Outcome.Completed(), r.outcome(), log);
    long seconds = Long.parseLong(log.substring("realtime=".length(), log.indexOf('.')));
    assertTrue(seconds > 1_700_000_000L, log);
    assertLineIn(log, "getentropy=0 errno=0");
    assertLineIn(log, "random_get=0");
    assertEquals(4, r.journal().size());
    for (JournalEntry e : r.journal()) {
      assertEquals("Allow", e.decision());
    }
  }

  @Test
  void procExitIsTheExitStatusAndLoggingDeniedDiscardsOutput() {
    String none = "{\"logging\":false,\"clock\":false,\"random\":false,\"inference\":false}";
    ExecutionResult r = run(clockRandom, grants(NO_STORAGE, none), null, Map.of("EXIT_WITH", "3"));
    assertEquals(new Outcome.Failed("exit status 3"), r.outcome());
    assertEquals("", out(r));
    assertTrue(r.stdio().orElseThrow().stdout().written() > 0, "written, counted, not kept");
    assertEquals(3, r.exitStatus());
    assertTrue(r.exited());
  }

  @Test
  void withoutAStorageRootNoPathIsReachable() {
    ExecutionResult r = run(escape, grants(STORAGE, LOG_ONLY), null, Map.of());
    String log = out(r);
    assertEquals(new Outcome.Completed(), r.outcome(), log);
    // No preopen: libc finds no directory to resolve against, the raw call has no descriptor 3.
    assertLineIn(log, "granted: errno=" + ENOTCAPABLE);
    assertLineIn(log, "raw-dotdot: wasi=8");
  }

  static final String NO_STORAGE = "{\"read\":[],\"write\":[],\"delete\":[]}";

  @Test
  void wasiImportsAreCheckedByNameAndSignature() {
    UnitException unknown =
        ExecutorTest.refused("(module (import \"wasi_snapshot_preview1\" \"teleport\" (func)))");
    assertEquals(UnitException.Part.IMPORT, unknown.part());
    assertTrue(
        unknown.getMessage().contains("wasi_snapshot_preview1.teleport"), unknown.getMessage());
    assertTrue(unknown.getMessage().contains("path_open"), unknown.getMessage());

    UnitException wrong =
        ExecutorTest.refused("(module (import \"wasi_snapshot_preview1\" \"fd_write\" (func)))");
    assertTrue(wrong.getMessage().contains("signature"), wrong.getMessage());

    CompiledUnit ok =
        COMPILER.compile(
            Wat2Wasm.parse(
                """
                (module
                  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
                  (memory (export "memory") 1)
                  (func (export "_start") (call $exit (i32.const 0))))
                """));
    ExecutionResult r = run(ok, grants(NO_STORAGE, LOG_ONLY), null, Map.of());
    assertEquals(new Outcome.Completed(), r.outcome());
    assertNotEquals(0, r.hostCalls());
  }

  /** The guest's output holds {@code line}, ended by a newline. */
  static void assertLineIn(String log, String line) {
    assertTrue(log.contains(line + "\n"), log);
  }
}
