package io.sandboxd.executor;

import static io.sandboxd.executor.WasiGuestTest.out;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Outcome;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real C program of about 1.7 MB, the SQLite shell built for wasm32-wasi ({@link
 * SqliteShellBuild}), compiled under the default compile limits and run by the executor. The
 * statements come from its start-up file {@code ~/.sqliterc} (HOME is "/", the storage root), so
 * these runs need neither arguments nor stdin; its output is in the run log.
 */
class SqliteShellRunTest {
  static final Executor EXECUTOR = new Executor(1, EnergyModel.estimate(10_000), 300_000);
  static final long SEED = 0x5eed_16L;
  static final String LOG =
      "{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}";
  static final String DB_GRANT =
      "{\"read\":[\".sqliterc\",\"db\",\"db/**\"],\"write\":[\"db/**\"],\"delete\":[\"db/**\"]}";
  static final AtomicInteger RUNS = new AtomicInteger();
  static byte[] wasm;
  static CompiledUnit shell;

  @TempDir Path root;

  @BeforeAll
  static void build() {
    wasm = SqliteShellBuild.wasm();
    // The default limits (browser-like validation, the default time budget) admit it.
    shell = new UnitCompiler(2, CompileLimits.defaults()).compile(wasm);
  }

  @AfterAll
  static void close() {
    EXECUTOR.close();
  }

  ExecutionResult run(String sqliterc, String storageGrant) throws IOException {
    Files.writeString(root.resolve(".sqliterc"), sqliterc, StandardCharsets.UTF_8);
    return EXECUTOR.execute(
        new UnitRequest(
                "sqlite-" + RUNS.incrementAndGet(),
                shell,
                "_start",
                WasiGuestTest.grants(storageGrant, LOG))
            .withEnv(Map.of("HOME", "/"))
            .withStorageRoot(root));
  }

  @Test
  void theShellIsARealProgramOfOverAMegabyte() {
    assertTrue(wasm.length >= 1_000_000, "the SQLite shell is " + wasm.length + " bytes");
    assertTrue(UnitCompiler.exportNames(shell).contains("_start"), "a WASI command");
  }

  @Test
  void runsStatementsFromItsStartupFile() throws IOException {
    Random random = new Random(SEED);
    long a = 1 + random.nextInt(1_000_000);
    long b = 1 + random.nextInt(1_000_000);
    ExecutionResult r =
        run(
            "create table t(x);\ninsert into t values (" + a + " * " + b + ");\nselect x from t;\n",
            "{\"read\":[\".sqliterc\"],\"write\":[],\"delete\":[]}");
    assertEquals(new Outcome.Completed(), r.outcome(), out(r));
    assertTrue(
        out(r).lines().anyMatch(l -> l.equals(Long.toString(a * b))),
        "seed " + SEED + ": " + out(r));
  }

  @Test
  void aDatabaseWrittenInOneRunIsReadInTheNext() throws IOException {
    String token = "row-" + Long.toHexString(new Random(SEED + 1).nextLong());
    // SQLite creates the file, not its directory.
    Files.createDirectories(root.resolve("db"));
    ExecutionResult write =
        run(
            ".open /db/test.db\ncreate table t(v);\ninsert into t values ('" + token + "');\n",
            DB_GRANT);
    assertEquals(new Outcome.Completed(), write.outcome(), out(write));
    byte[] db = Files.readAllBytes(root.resolve("db/test.db"));
    assertArrayEquals(
        "SQLite format 3\0".getBytes(StandardCharsets.US_ASCII),
        Arrays.copyOf(db, 16),
        "a database file in the storage root");

    ExecutionResult read = run(".open /db/test.db\nselect v from t;\n", DB_GRANT);
    assertEquals(new Outcome.Completed(), read.outcome(), out(read));
    assertTrue(out(read).lines().anyMatch(token::equals), out(read));
  }

  @Test
  void aDatabaseOutsideItsGrantIsRefused() throws IOException {
    Files.createDirectories(root.resolve("private"));
    ExecutionResult r = run(".open /private/x.db\ncreate table t(x);\n", DB_GRANT);
    assertTrue(out(r).contains("unable to open database \"/private/x.db\""), out(r));
    assertFalse(Files.exists(root.resolve("private/x.db")), "created outside its grant");
    // Nor beyond the storage root.
    ExecutionResult escape = run(".open /../outside.db\ncreate table t(x);\n", DB_GRANT);
    assertTrue(out(escape).contains("unable to open database"), out(escape));
    assertFalse(Files.exists(root.resolveSibling("outside.db")), "created outside the root");
  }
}
