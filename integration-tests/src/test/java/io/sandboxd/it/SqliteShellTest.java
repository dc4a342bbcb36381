package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.executor.SqliteShellBuild;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 16 item 3: a real C program of about 1.7 MB, the SQLite shell built for wasm32-wasi by
 * {@code bin/sqlite-wasm} (fetched, checked against its pinned SHA-256, compiled with clang-16 and
 * cached), through the running daemon and sandboxctl.
 */
class SqliteShellTest {
  static final String GRANTS =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000000000,\"cpu_time_ms\":60000,"
          + "\"memory_bytes\":268435456},"
          + "\"storage\":{\"read\":[],\"write\":[],\"delete\":[]},"
          + "\"network\":{\"outbound\":[],\"inbound\":false},"
          + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
          + "\"host\":{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}}";

  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;
  static Path shellFile;

  @BeforeAll
  static void start() throws Exception {
    shellFile = SqliteShellBuild.path();
    daemon = DaemonProcess.start(dir.resolve("state"), dir.resolve("run/sandboxd.sock"));
    client = new DaemonClient(daemon.socket);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  @Test
  void theDaemonAdmitsCompilesAndRunsTheShell() throws Exception {
    byte[] shell = Files.readAllBytes(shellFile);
    assertTrue(shell.length >= 1_000_000, "the SQLite shell is " + shell.length + " bytes");
    // The first submission compiles it (about a minute on a loaded 2-CPU machine).
    SubmitReply r = Submissions.submit(client, shell, GRANTS, "_start", 600);
    assertEquals("\"Completed\"", r.getOutcomeJson(), r.getLog());
    // Its main ran: with no HOME it says so on stderr; stdin is not a terminal, so no banner.
    assertTrue(r.getLog().contains("cannot find home directory"), r.getLog());
    assertFalse(r.getLog().contains("Enter \".help\""), r.getLog());
    assertTrue(AdmissionBoundsTest.cpuMs(r) > 0, "the receipt counts the compile's CPU");
  }
}
