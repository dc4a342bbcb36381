package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetRunRequest;
import io.sandboxd.daemon.rpc.ListRunsRequest;
import io.sandboxd.daemon.rpc.RunInfo;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The node policy through the running daemon: the caller's uid comes from SO_PEERCRED, is recorded
 * with its run, and the rule that matches it bounds grants (by attenuation), module size and runs
 * in flight; a uid no rule names is refused.
 */
class NodePolicyTest {
  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;
  static final long ME = new com.sun.security.auth.module.UnixSystem().getUid();
  static byte[] hello;

  @BeforeAll
  static void start() throws Exception {
    hello = Submissions.exampleUnit("hello");
    Path cfg =
        Files.writeString(
            dir.resolve("policy.json"),
            "{\"max_concurrent_units\":4,\"policy\":{\"rules\":[{\"name\":\"no-exec\","
                + "\"uids\":["
                + ME
                + "],\"max_module_bytes\":"
                + (hello.length + 16)
                + ",\"max_concurrent_runs\":1,\"ceiling\":{\"compute\":{\"cpu_time_ms\":20000,"
                + "\"energy_budget_uj\":1000000000000,\"memory_bytes\":1048576},"
                + "\"host\":{\"logging\":true}}}]}}");
    daemon =
        DaemonProcess.start(dir.resolve("s"), dir.resolve("s.sock"), "--config", cfg.toString());
    client = new DaemonClient(daemon.socket);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  static String spinGrants(long cpuMs) {
    return "{\"compute\":{\"cpu_time_ms\":"
        + cpuMs
        + ",\"energy_budget_uj\":1000000000000,\"memory_bytes\":131072},"
        + "\"host\":{\"logging\":true}}";
  }

  @Test
  void theCallersUidIsAdmittedAndRecorded() throws Exception {
    SubmitReply r = Submissions.submit(client, hello, Submissions.exampleGrants("hello"));
    assertEquals("\"Completed\"", r.getOutcomeJson());
    RunInfo info = client.stub().getRun(GetRunRequest.newBuilder().setRunId(r.getRunId()).build());
    assertTrue(info.hasSubmitterUid(), info.toString());
    assertEquals(ME, Integer.toUnsignedLong(info.getSubmitterUid()));
    RunInfo listed =
        client
            .stub()
            .listRuns(ListRunsRequest.newBuilder().setLimit(1000).build())
            .getRunsList()
            .stream()
            .filter(x -> x.getRunId().equals(r.getRunId()))
            .findFirst()
            .orElseThrow();
    assertEquals(ME, Integer.toUnsignedLong(listed.getSubmitterUid()));
    assertTrue(daemon.log().contains("node policy rule no-exec: uids [" + ME + "]"), daemon.log());
    DaemonProcess.Result show = daemon.ctl("runs", "show", r.getRunId());
    assertEquals(0, show.exit(), show.err());
    assertTrue(show.out().contains("submitter  uid " + ME), show.out());
  }

  @Test
  void aGrantBeyondTheCeilingIsRefusedNamingTheRuleAndThePart() {
    StatusRuntimeException e =
        assertThrows(
            StatusRuntimeException.class,
            () ->
                Submissions.submit(
                    client,
                    hello,
                    "{\"process\":{\"exec\":true,\"programs\":[\"ls\"],\"max_processes\":1}}"));
    assertEquals(Status.Code.PERMISSION_DENIED, e.getStatus().getCode());
    String why = e.getStatus().getDescription();
    assertTrue(why.contains("rule \"no-exec\"") && why.contains("$.process.exec"), why);
    assertTrue(why.contains("uid " + ME), why);
    StatusRuntimeException clock =
        assertThrows(
            StatusRuntimeException.class,
            () -> Submissions.submit(client, hello, "{\"host\":{\"clock\":true}}"));
    assertEquals(Status.Code.PERMISSION_DENIED, clock.getStatus().getCode());
    assertTrue(clock.getStatus().getDescription().contains("$.host.clock"));
  }

  @Test
  void aModuleLargerThanTheRuleAllowsIsRefused() {
    // hello.wasm with a 100-byte custom section: still a valid module, 104 bytes larger
    byte[] big = new byte[hello.length + 104];
    System.arraycopy(hello, 0, big, 0, hello.length);
    big[hello.length] = 0; // custom section
    big[hello.length + 1] = 102; // size: name length, name, payload
    big[hello.length + 2] = 1;
    big[hello.length + 3] = 'x';
    StatusRuntimeException e =
        assertThrows(
            StatusRuntimeException.class, () -> Submissions.submit(client, big, spinGrants(100)));
    assertEquals(Status.Code.PERMISSION_DENIED, e.getStatus().getCode());
    String why = e.getStatus().getDescription();
    assertTrue(why.contains("rule \"no-exec\"") && why.contains(big.length + " bytes"), why);
  }

  @Test
  void runsInFlightPerCallerAreBounded() throws Exception {
    byte[] spin = Submissions.exampleUnit("spin");
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<SubmitReply>> f = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        f.add(pool.submit(() -> Submissions.submit(client, spin, spinGrants(4000))));
      }
      int refused = 0;
      int ran = 0;
      for (Future<SubmitReply> x : f) {
        try {
          SubmitReply r = x.get(5, TimeUnit.MINUTES);
          assertEquals("{\"Terminated\":{\"breach\":\"CpuTime\"}}", r.getOutcomeJson());
          ran++;
        } catch (java.util.concurrent.ExecutionException ex) {
          StatusRuntimeException e = (StatusRuntimeException) ex.getCause();
          assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.getStatus().getCode(), e.toString());
          String why = e.getStatus().getDescription();
          assertTrue(why.contains("rule \"no-exec\"") && why.contains("1 runs in flight"), why);
          refused++;
        }
      }
      assertEquals(1, ran, "one of two concurrent runs ran");
      assertEquals(1, refused, "the other was refused while the first was in flight");
    } finally {
      pool.shutdownNow();
    }
    // the place is free again once the run is recorded
    assertEquals(
        "\"Completed\"",
        Submissions.submit(client, hello, Submissions.exampleGrants("hello")).getOutcomeJson());
  }

  @Test
  void aUidNoRuleNamesIsRefused() throws Exception {
    long other = ME == 4_000_000 ? 4_000_001 : 4_000_000;
    Path cfg =
        Files.writeString(
            dir.resolve("others.json"),
            "{\"policy\":{\"rules\":[{\"name\":\"someone-else\",\"uids\":["
                + other
                + "],\"ceiling\":\"unrestricted\"}]}}");
    try (DaemonProcess d =
            DaemonProcess.start(
                dir.resolve("o"), dir.resolve("o.sock"), "--config", cfg.toString());
        DaemonClient c = new DaemonClient(d.socket)) {
      StatusRuntimeException e =
          assertThrows(
              StatusRuntimeException.class,
              () -> Submissions.submit(c, hello, Submissions.exampleGrants("hello")));
      assertEquals(Status.Code.PERMISSION_DENIED, e.getStatus().getCode());
      String why = e.getStatus().getDescription();
      assertTrue(why.contains("uid " + ME) && why.contains("matches no rule"), why);
      assertTrue(why.contains("someone-else"), why);
      // the CLI says so too, and exits 2 (refused)
      Path grants = DaemonProcess.ROOT.resolve("examples/hello.grants.json");
      DaemonProcess.Result run =
          d.ctl(
              "run",
              DaemonProcess.ROOT.resolve("examples/hello.wasm").toString(),
              "--grants",
              grants.toString());
      assertEquals(2, run.exit(), run.err());
      assertTrue(run.err().contains("matches no rule"), run.err());
    }
  }

  @Test
  void theCliComparesGrantsByAttenuation() throws Exception {
    Path child = Files.writeString(dir.resolve("child.json"), "{\"host\":{\"clock\":true}}");
    Path parent = DaemonProcess.ROOT.resolve("examples/hello.grants.json");
    DaemonProcess.Result wider =
        DaemonProcess.sandboxctl(null, "grants", "attenuates", child.toString(), parent.toString());
    assertEquals(1, wider.exit(), wider.err());
    assertTrue(wider.err().contains("$.host.clock"), wider.err());
    DaemonProcess.Result same =
        DaemonProcess.sandboxctl(
            null, "grants", "attenuates", parent.toString(), parent.toString());
    assertEquals(0, same.exit(), same.err());
  }
}
