package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.Blake3;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.executor.CountingEndpoint;
import io.sandboxd.executor.TaintGuest;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23 item 5 through the running daemon: a unit reads untrusted storage through WASI ({@code
 * path_open}/{@code fd_read}) and is TAINTED at its {@code sandbox.egress},; the same unit reading
 * trusted storage reaches the endpoint.
 */
class WasiTaintTest {
  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;
  static CountingEndpoint sink;
  static String endpoint;

  @BeforeAll
  static void start() throws Exception {
    sink = new CountingEndpoint();
    endpoint = sink.address;
    daemon = DaemonProcess.start(dir.resolve("state"), dir.resolve("run/sandboxd.sock"));
    client = new DaemonClient(daemon.socket);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
    if (sink != null) {
      sink.close();
    }
  }

  static String grants() {
    return TaintGuest.grants(endpoint, "[]");
  }

  /** The unit reading {@code path}, with its storage directory on the node holding both files. */
  static byte[] unit(String path) throws Exception {
    byte[] module = Wat2Wasm.parse(TaintGuest.readThenEgress(path, endpoint));
    Path storage =
        Files.createDirectories(dir.resolve("state/storage").resolve(Blake3.hex(module)));
    Files.createDirectories(storage.resolve("inbox"));
    Files.createDirectories(storage.resolve("data"));
    Files.writeString(storage.resolve("inbox/m1"), "untrusted mail");
    Files.writeString(storage.resolve("data/x"), "trusted data");
    return module;
  }

  @Test
  void aWasiReadOfUntrustedStorageIsTaintedAtSandboxEgress() throws Exception {
    int before = sink.hits.get();
    SubmitReply r = Submissions.submit(client, unit("inbox/m1"), grants());
    // TAINTED is -2 (ABI.md): the entry returned what egress answered.
    assertEquals("{\"Failed\":{\"reason\":\"entry returned -2\"}}", r.getOutcomeJson());
    assertEquals(before, sink.hits.get(), "nothing left the node");
  }

  @Test
  void aWasiReadOfTrustedStorageLeavesTheRunCleanAndEgressGoesOut() throws Exception {
    int before = sink.hits.get();
    SubmitReply r = Submissions.submit(client, unit("data/x"), grants());
    assertEquals("\"Completed\"", r.getOutcomeJson(), r.getLog());
    assertEquals(before + 1, sink.hits.get());
  }
}
