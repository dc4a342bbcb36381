package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.EnvironmentInfo;
import io.sandboxd.daemon.rpc.ListEnvironmentsRequest;
import io.sandboxd.daemon.rpc.ReplayRequest;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node policy rule's {@code environments} holds at admission whichever way the environment is
 * named, and a replay is admitted under the caller's rule like a submission.
 */
class NodePolicyEnvironmentTest {
  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;
  static final long ME = new com.sun.security.auth.module.UnixSystem().getUid();
  static byte[] hello;
  static String helloGrants;
  static String buildAddress;
  static String prodAddress;

  static Path config(String name, String rule) throws Exception {
    Path build =
        Files.writeString(
            dir.resolve("build.json"), "{\"image\":\"debian@sha256:" + "1a".repeat(32) + "\"}");
    Path prod =
        Files.writeString(
            dir.resolve("prod.json"), "{\"image\":\"debian@sha256:" + "2b".repeat(32) + "\"}");
    return Files.writeString(
        dir.resolve(name),
        "{\"environments\":[{\"name\":\"build\",\"devcontainer\":\""
            + build
            + "\"},{\"name\":\"prod\",\"devcontainer\":\""
            + prod
            + "\"}],\"policy\":{\"rules\":[{\"name\":\"builders\",\"uids\":["
            + ME
            + "],"
            + rule
            + "}]}}");
  }

  @BeforeAll
  static void start() throws Exception {
    hello = Submissions.exampleUnit("hello");
    helloGrants = Submissions.exampleGrants("hello");
    Path cfg = config("policy.json", "\"ceiling\":\"unrestricted\",\"environments\":[\"build\"]");
    daemon =
        DaemonProcess.start(dir.resolve("s"), dir.resolve("s.sock"), "--config", cfg.toString());
    client = new DaemonClient(daemon.socket);
    for (EnvironmentInfo e :
        client
            .stub()
            .listEnvironments(ListEnvironmentsRequest.getDefaultInstance())
            .getEnvironmentsList()) {
      if (e.getName().equals("build")) {
        buildAddress = e.getAddress();
      } else if (e.getName().equals("prod")) {
        prodAddress = e.getAddress();
      }
    }
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  static SubmitReply submitIn(DaemonClient c, String env) {
    return c.stub()
        .submit(
            SubmitRequest.newBuilder()
                .setModule(ByteString.copyFrom(hello))
                .setGrantsJson(helloGrants)
                .setEntry("run")
                .setEnv(env)
                .build());
  }

  @Test
  void theRulesEnvironmentIsAdmittedByNameAndByAddress() {
    assertEquals("\"Completed\"", submitIn(client, "build").getOutcomeJson());
    assertEquals("\"Completed\"", submitIn(client, "b3:" + buildAddress).getOutcomeJson());
  }

  @Test
  void anotherEnvironmentIsRefusedByNameAndByAddress() {
    for (String env : new String[] {"prod", "b3:" + prodAddress}) {
      StatusRuntimeException e =
          assertThrows(StatusRuntimeException.class, () -> submitIn(client, env));
      assertEquals(Status.Code.PERMISSION_DENIED, e.getStatus().getCode(), env);
      String why = e.getStatus().getDescription();
      assertTrue(why.contains("rule \"builders\"") && why.contains("\"prod\""), why);
      assertTrue(why.contains(prodAddress), why);
    }
  }

  @Test
  void aReplayIsAdmittedUnderTheCallersRuleAsItIsNow() throws Exception {
    Path state = dir.resolve("replay-state");
    Path sock = dir.resolve("r.sock");
    String runId;
    try (DaemonProcess d =
            DaemonProcess.start(
                state,
                sock,
                "--config",
                config("open.json", "\"ceiling\":\"unrestricted\",\"environments\":[\"*\"]")
                    .toString());
        DaemonClient c = new DaemonClient(sock)) {
      runId = submitIn(c, "prod").getRunId();
      assertTrue(
          c.stub().replay(ReplayRequest.newBuilder().setRunId(runId).build()).getMatches(),
          "the replay matches while the rule allows the run");
    }
    // The same caller and environment under a ceiling narrower than the recorded grants.
    Path tight =
        config(
            "tight.json",
            "\"ceiling\":{\"compute\":{\"cpu_time_ms\":1000}},\"environments\":[\"prod\"]");
    replayRefused(state, sock, tight, runId, "rule \"builders\"");
    Path otherEnv =
        config("other.json", "\"ceiling\":\"unrestricted\",\"environments\":[\"build\"]");
    replayRefused(state, sock, otherEnv, runId, "\"prod\"");
  }

  /**
   * Under {@code config} the daemon on {@code state} refuses to replay {@code runId}: {@code why}.
   */
  static void replayRefused(Path state, Path sock, Path config, String runId, String why)
      throws Exception {
    StatusRuntimeException e = StoppedState.refusedReplay(state, sock, config, runId);
    assertEquals(Status.Code.PERMISSION_DENIED, e.getStatus().getCode());
    assertTrue(e.getStatus().getDescription().contains(why), e.getMessage());
  }
}
