package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertThrows;

import com.google.protobuf.ByteString;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.ReplayReply;
import io.sandboxd.daemon.rpc.ReplayRequest;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import io.sandboxd.daemon.rpc.WaitRunRequest;
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
        .submit(request(module, grants, entry).build());
  }

  /**
   * A request for {@code module}'s {@code entry} under {@code grants}, for the caller to finish.
   */
  static SubmitRequest.Builder request(byte[] module, String grants, String entry) {
    return SubmitRequest.newBuilder()
        .setModule(ByteString.copyFrom(module))
        .setGrantsJson(grants)
        .setEntry(entry);
  }

  /** Submits {@code request}, waiting up to two minutes. */
  static SubmitReply submit(DaemonClient c, SubmitRequest request) {
    return c.stub().withDeadlineAfter(120, TimeUnit.SECONDS).submit(request);
  }

  /** Submits {@code module}'s `run` under {@code grants}, waiting up to two minutes. */
  static SubmitReply submit(DaemonClient c, byte[] module, String grants) {
    return submit(c, module, grants, "run", 120);
  }

  /** Submits {@code request}, which the daemon must refuse: the refusal it answers with. */
  static StatusRuntimeException refused(DaemonClient c, SubmitRequest request) {
    return assertThrows(StatusRuntimeException.class, () -> c.stub().submit(request));
  }

  /** Submits {@code module}'s {@code entry} under {@code grants} detached: the new run's id. */
  static String detached(DaemonClient c, byte[] module, String grants, String entry) {
    return c.stub().submit(request(module, grants, entry).setDetach(true).build()).getRunId();
  }

  /** Submits {@code module}'s `step` detached under the minted grant {@code grantsId}: its id. */
  static String detachedUnderMinted(DaemonClient c, byte[] module, String grantsId) {
    return c.stub()
        .submit(
            SubmitRequest.newBuilder()
                .setModule(ByteString.copyFrom(module))
                .setMintedGrants("b3:" + grantsId)
                .setEntry("step")
                .setDetach(true)
                .build())
        .getRunId();
  }

  /** Asks {@code run} to park: the state the daemon answers ("parked" once it has). */
  static String suspend(DaemonClient c, String run) {
    return c.stub().suspendRun(DurableRunRequest.newBuilder().setRunId(run).build()).getState();
  }

  /** Waits up to {@code timeoutMs} for {@code run} to end: the state it is in then. */
  static String waitState(DaemonClient c, String run, long timeoutMs) {
    return c.stub()
        .waitRun(WaitRunRequest.newBuilder().setRunId(run).setTimeoutMs(timeoutMs).build())
        .getState();
  }

  /** Replays {@code run}, waiting up to two minutes: whether it matched, and how. */
  static ReplayReply replay(DaemonClient c, String run) {
    return c.stub()
        .withDeadlineAfter(120, TimeUnit.SECONDS)
        .replay(ReplayRequest.newBuilder().setRunId(run).build());
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
