package io.sandboxd.it;

import com.google.protobuf.ByteString;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.concurrent.TimeUnit;

/** What the integration tests send a running daemon: submissions and the example units. */
final class Submissions {
  private Submissions() {}

  /**
   * Submits {@code module} under {@code grants}, entry {@code entry}, waiting up to the deadline.
   */
  static SubmitReply submit(
      DaemonClient c, byte[] module, String grants, String entry, long deadlineSeconds) {
    return c.stub()
        .withDeadlineAfter(deadlineSeconds, TimeUnit.SECONDS)
        .submit(
            SubmitRequest.newBuilder()
                .setModule(ByteString.copyFrom(module))
                .setGrantsJson(grants)
                .setEntry(entry)
                .build());
  }

  /** Submits {@code module}'s `run` under {@code grants}, waiting up to two minutes. */
  static SubmitReply submit(DaemonClient c, byte[] module, String grants) {
    return submit(c, module, grants, "run", 120);
  }

  /** The bytes of {@code examples/<name>.wasm}. */
  static byte[] exampleUnit(String name) throws IOException {
    return Files.readAllBytes(DaemonProcess.ROOT.resolve("examples/" + name + ".wasm"));
  }

  /** The text of {@code examples/<name>.grants.json}. */
  static String exampleGrants(String name) throws IOException {
    return Files.readString(
        DaemonProcess.ROOT.resolve("examples/" + name + ".grants.json"), StandardCharsets.UTF_8);
  }

  /** Closes each of {@code things} that is set, in order: a test class's client then daemon. */
  static void closeAll(AutoCloseable... things) throws Exception {
    for (AutoCloseable t : things) {
      if (t != null) {
        t.close();
      }
    }
  }
}
