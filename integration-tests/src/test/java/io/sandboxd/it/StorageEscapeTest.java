package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Blake3;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.executor.WasiToolchain;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 8 items 2, 3 and 11 (storage, kv) against the running daemon: links, renames, trailing
 * slashes and subdirectory descriptors never give write access to read-only bytes; a replay leaves
 * storage byte-identical; holes and quotas bound what a module keeps on the node's disk.
 */
class StorageEscapeTest {
  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;

  // WASI errno values as wasi-libc reports them.
  static final int EACCES = 2;
  static final int EDQUOT = 19;
  static final int ENOTDIR = 54;
  static final int EPERM = 63;
  static final int ENOTCAPABLE = 76;
  static final int QUOTA = -10;

  static final String SECRET = "read-only secret\n";

  @BeforeAll
  static void start() throws Exception {
    Path cfg =
        Files.writeString(
            dir.resolve("quota.json"),
            "{\"quotas\":{\"storage_bytes_per_module\":4194304,\"kv_bytes_per_module\":8388608}}");
    daemon =
        DaemonProcess.start(
            dir.resolve("state"), dir.resolve("run/sandboxd.sock"), "--config", cfg.toString());
    client = new DaemonClient(daemon.socket);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  /** {@code src/test/c/storage_attack.c} built for one scenario with clang-16 for wasm32-wasi. */
  static byte[] guest(String scenario) throws Exception {
    Path out = Files.createDirectories(Path.of("target", "storage-guests"));
    Path wasm = out.resolve(scenario + ".wasm");
    WasiToolchain.compile(
        wasm, "-DSCENARIO_" + scenario, Path.of("src", "test", "c", "storage_attack.c").toString());
    return Files.readAllBytes(wasm);
  }

  /** The storage directory the daemon gives {@code module}. */
  static Path storageOf(byte[] module) throws Exception {
    return Files.createDirectories(dir.resolve("state/storage").resolve(Blake3.hex(module)));
  }

  static String grants(String storage, String kv) {
    return "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000000000,\"cpu_time_ms\":20000,"
        + "\"memory_bytes\":67108864},\"storage\":"
        + storage
        + ",\"network\":{\"outbound\":[],\"inbound\":false},\"kv\":"
        + kv
        + ",\"host\":{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}}";
  }

  /** What a guest printed: its stdout, then its stderr. */
  static String out(SubmitReply r) {
    return r.getStdout().toStringUtf8() + r.getStderr().toStringUtf8();
  }

  /** Asserts that {@code log} holds each of {@code parts}, naming the first one missing. */
  static void assertPrinted(String log, String... parts) {
    for (String part : parts) {
      assertTrue(log.contains(part), "missing " + part.strip() + " in:\n" + log);
    }
  }

  static final String NO_KV = "{\"read\":false,\"write\":false,\"prefixes\":[]}";

  static SubmitReply submit(byte[] module, String grants) {
    return Submissions.submit(client, module, grants, "_start", 120);
  }

  /** Every file beneath {@code root} with its bytes (links as their target), for comparing. */
  static Map<String, String> snapshot(Path root) throws Exception {
    Map<String, String> out = new TreeMap<>();
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : (Iterable<Path>) walk::iterator) {
        String rel = root.relativize(p).toString();
        if (Files.isSymbolicLink(p)) {
          out.put(rel, "-> " + Files.readSymbolicLink(p));
        } else if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
          out.put(rel, Blake3.hex(Files.readAllBytes(p)) + " " + Files.size(p));
        } else {
          out.put(rel, "dir");
        }
      }
    }
    return out;
  }

  @Test
  void linksRenamesTrailingSlashesAndSubdirectoriesNeverReachReadOnlyBytes() throws Exception {
    byte[] module = guest("ATTACK");
    Path root = storageOf(module);
    Path secret = Files.createDirectories(root.resolve("ro")).resolve("secret");
    Files.writeString(secret, SECRET);
    Path rw = Files.createDirectories(root.resolve("rw"));
    Files.writeString(rw.resolve("mine"), "mine\n");
    // Planted by an earlier run or process: a second name, and a link, for the read-only bytes.
    Files.createLink(rw.resolve("prelink"), secret);
    Files.createSymbolicLink(rw.resolve("presymlink"), Path.of("../ro/secret"));

    String storage =
        "{\"read\":[\"ro/**\",\"rw/**\"],\"write\":[\"rw/**\"],\"delete\":[\"rw/**\"]}";
    SubmitReply r = submit(module, grants(storage, NO_KV));
    String log = out(r);
    assertEquals("\"Completed\"", r.getOutcomeJson(), log);

    assertPrinted(
        log,
        "link: wasi=" + EPERM + "\n",
        "write-hl: open errno=",
        "write-prelink: open errno=" + EPERM + "\n",
        "read-prelink: refused errno=" + EPERM + "\n",
        "write-presymlink: open errno=" + EACCES + "\n",
        "trailing-slash: wasi=" + ENOTDIR + "\n",
        "trailing-slash-dot: wasi=" + ENOTDIR + "\n",
        "rename-file: -1 errno=" + EACCES + "\n",
        "rename-dir: -1 errno=" + EACCES + "\n",
        "rename-over: -1 errno=" + EACCES + "\n",
        "symlink: -1 errno=" + EPERM + "\n",
        "subdir: wasi=0\n",
        "subdir-dotdot: wasi=" + ENOTCAPABLE + "\n",
        "subdir-link: wasi=" + EPERM + "\n");

    assertEquals(SECRET, Files.readString(secret));
    assertFalse(Files.exists(rw.resolve("hl"), LinkOption.NOFOLLOW_LINKS));
    assertFalse(Files.exists(rw.resolve("moved"), LinkOption.NOFOLLOW_LINKS));
    assertFalse(Files.exists(rw.resolve("sl"), LinkOption.NOFOLLOW_LINKS));
    assertEquals("mine\n", Files.readString(rw.resolve("mine")));
  }

  @Test
  void aReplayAnswersStorageFromTheJournalAndLeavesItByteIdentical() throws Exception {
    byte[] module = guest("REPLAY");
    Path root = storageOf(module);
    Path data = Files.createDirectories(root.resolve("data"));
    Files.writeString(data.resolve("counter"), "41\n");
    Files.writeString(data.resolve("log"), "start\n");
    Files.writeString(data.resolve("gone"), "delete me\n");
    String storage = "{\"read\":[\"data/**\"],\"write\":[\"data/**\"],\"delete\":[\"data/**\"]}";
    SubmitReply r = submit(module, grants(storage, NO_KV));
    String log = out(r);
    assertEquals("\"Completed\"", r.getOutcomeJson(), log);
    assertPrinted(log, "counter read: 41\n", "unlink gone: 0 errno=0\n");
    assertEquals("42\n", Files.readString(data.resolve("counter")));
    assertEquals("start\nrun saw 41\n", Files.readString(data.resolve("log")));
    assertFalse(Files.exists(data.resolve("gone")));

    Map<String, String> before = snapshot(root);
    for (int i = 0; i < 2; i++) {
      DaemonProcess.Result replay = daemon.ctl("replay", r.getRunId());
      assertEquals(0, replay.exit(), replay.out() + replay.err());
      assertTrue(replay.out().contains("replay matches"), replay.out() + replay.err());
      assertEquals(before, snapshot(root), "replay " + i + " changed the unit's storage");
    }
    // The replay did not even need the storage: it answers from the journal alone.
    Path moved = root.resolveSibling(root.getFileName() + ".away");
    Files.move(root, moved);
    try {
      DaemonProcess.Result replay = daemon.ctl("replay", r.getRunId());
      assertEquals(0, replay.exit(), replay.out() + replay.err());
      assertFalse(Files.exists(root), "a replay created the storage root");
    } finally {
      Files.move(moved, root);
    }
  }

  @Test
  void aWriteFarPastTheEndIsRefusedNotASparseFile() throws Exception {
    byte[] module = guest("SPARSE");
    Path root = storageOf(module);
    SubmitReply r =
        submit(module, grants("{\"read\":[],\"write\":[\"data/**\"],\"delete\":[]}", NO_KV));
    String log = out(r);
    assertEquals("\"Completed\"", r.getOutcomeJson(), log);
    assertPrinted(
        log,
        "open: wasi=0\n",
        "pwrite: wasi=" + EDQUOT + "\n",
        "seek-write: wasi=" + EDQUOT + "\n",
        "set-size: wasi=" + EDQUOT + "\n",
        "allocate: wasi=" + EDQUOT + "\n",
        "storage_write: " + QUOTA + "\n");
    assertEquals(0, Files.size(root.resolve("data/big")));
    assertFalse(Files.exists(root.resolve("data/big2")));
  }

  @Test
  void kvAndStorageStopAtTheModulesQuota() throws Exception {
    byte[] module = guest("QUOTA");
    Path root = storageOf(module);
    String kv = "{\"read\":false,\"write\":true,\"prefixes\":[[113,47]]}";
    SubmitReply r =
        submit(module, grants("{\"read\":[],\"write\":[\"data/**\"],\"delete\":[]}", kv));
    String log = out(r);
    assertEquals("\"Completed\"", r.getOutcomeJson(), log);
    // 8 MiB of kv quota holds seven 1 MiB values (keys and entries cost a little more).
    assertTrue(log.contains("kv stopped at 7 status=" + QUOTA + "\n"), log);
    // 4 MiB of storage: three 1 MiB files and their names fit, the fourth file does not.
    assertTrue(log.contains("storage stopped at 3 errno=" + EDQUOT + "\n"), log);
    assertTrue(log.contains("storage_write stopped at 0 status=" + QUOTA + "\n"), log);
    long bytes;
    try (Stream<Path> walk = Files.walk(root)) {
      bytes =
          walk.filter(p -> Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS))
              .mapToLong(p -> p.toFile().length())
              .sum();
    }
    assertTrue(bytes <= 4L << 20, "storage holds " + bytes + " bytes past its 4 MiB quota");

    // Quotas count the bytes actually stored: a second run overwriting the same keys and files
    // gets exactly as far again, neither less (double counting) nor more (a reset).
    SubmitReply again =
        submit(module, grants("{\"read\":[],\"write\":[\"data/**\"],\"delete\":[]}", kv));
    String log2 = out(again);
    assertTrue(log2.contains("kv stopped at 7 status=" + QUOTA + "\n"), log2);
    assertTrue(log2.contains("storage stopped at 3 errno=" + EDQUOT + "\n"), log2);
  }
}
