package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import com.google.protobuf.ByteString;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.config.DaemonConfig;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A daemon closed inside a longer-lived JVM (an embedder, a test run) leaves none of its threads
 * behind: its call handlers, compile threads, node-log timer, warm-pool refill and fleet start all
 * end with it, after a clean start and after a start that fails halfway.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DaemonCloseTest {
  static final String UNIT =
      """
      (module
        (memory (export "memory") 1)
        (func (export "run") (result i32) (i32.const 0)))
      """;

  static final String GRANTS =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000000,\"cpu_time_ms\":5000,"
          + "\"memory_bytes\":1048576},"
          + "\"host\":{\"logging\":false,\"clock\":false,\"random\":false,\"inference\":false}}";

  // Threads the JVM or a library keeps once for the whole process, not one per daemon.
  static final Set<String> PROCESS_WIDE =
      Set.of(
          "JNA Cleaner", // JNA's one cleaner for every native reference
          "process reaper", // the JDK's, for child processes
          "globalEventExecutor", // Netty's, ends by itself after a second idle
          "ObjectCleanerThread"); // Netty's

  @TempDir Path tmp;

  private static int refusedPort() throws Exception {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private static List<String> newThreads(Set<Thread> before) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && !before.contains(t) && !PROCESS_WIDE.contains(t.getName()))
        .map(Thread::getName)
        .sorted()
        .toList();
  }

  /** Waits for the threads started since {@code before} to end; those still alive at the end. */
  private static List<String> leftAfter(Set<Thread> before) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    List<String> left = newThreads(before);
    while (!left.isEmpty() && System.nanoTime() < until) {
      Thread.sleep(50);
      left = newThreads(before);
    }
    return left;
  }

  @Test
  void aDaemonThatRanUnitsLeavesNoThreadOnceClosed() throws Exception {
    Set<Thread> before = Set.copyOf(Thread.getAllStackTraces().keySet());
    // A fleet whose broker refuses (its start waits), and enough runs of one module for an
    // adaptive warm pool (more than its 8 submissions a window), so its refill works too.
    String config =
        "{\"fleet\":{\"nats\":\"nats://127.0.0.1:"
            + refusedPort()
            + "\",\"aggregator_key\":\""
            + SigningKey.generate().publicKey().hex()
            + "\"}}";
    byte[] wasm = Wat2Wasm.parse(UNIT);
    DaemonPaths paths = DaemonPaths.resolve(false, tmp.resolve("state"), tmp.resolve("d.sock"));
    Daemon daemon =
        Daemon.start(paths, DaemonConfig.parse(config.getBytes(StandardCharsets.UTF_8)));
    SubmitRequest run =
        SubmitRequest.newBuilder()
            .setModule(ByteString.copyFrom(wasm))
            .setGrantsJson(GRANTS)
            .build();
    try (DaemonClient client = new DaemonClient(paths.socket())) {
      for (int i = 0; i < 12; i++) {
        SubmitReply r = client.stub().submit(run);
        assertTrue(r.getOutcomeJson().contains("Completed"), r.getOutcomeJson());
      }
    } finally {
      daemon.close();
    }
    assertEquals(List.of(), leftAfter(before), "threads the closed daemon left running");
  }

  @Test
  void aStartThatFailsHalfwayLeavesNoThread() throws Exception {
    Set<Thread> before = Set.copyOf(Thread.getAllStackTraces().keySet());
    // Refused after the store, the node log's timer and the compiler have started: an
    // environment whose devcontainer file does not exist.
    String config =
        "{\"environments\":[{\"name\":\"gone\",\"devcontainer\":\""
            + tmp.resolve("no-such.json")
            + "\"}]}";
    DaemonPaths paths = DaemonPaths.resolve(false, tmp.resolve("state"), tmp.resolve("d.sock"));
    RuntimeException e =
        assertThrows(
            RuntimeException.class,
            () -> Daemon.start(paths, DaemonConfig.parse(config.getBytes(StandardCharsets.UTF_8))));
    assertTrue(e.getMessage().contains("gone"), "refused for the environment: " + e.getMessage());
    assertEquals(List.of(), leftAfter(before), "threads the failed start left running");
  }
}
