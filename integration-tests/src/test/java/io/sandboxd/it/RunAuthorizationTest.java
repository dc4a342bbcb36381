package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetStatusRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23 item 2 through the running daemon, with two tenant uids made by useradd and the client
 * run as each through setpriv: a tenant acts on its own durable run (show, suspend, export) and is
 * refused PERMISSION_DENIED, naming the rule, on another tenant's; a method its rule does not give
 * is refused; the operator's rule acts on any run; `status` shows the rules in force.
 */
class RunAuthorizationTest {
  static final String ALICE = "sbx-it-alice";
  static final String BOB = "sbx-it-bob";

  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient root;
  static Path module;
  static Path grants;

  @BeforeAll
  static void start() throws Exception {
    // setpriv to another uid and useradd need root; the project's CI and bin/test run as root.
    assumeTrue(
        new com.sun.security.auth.module.UnixSystem().getUid() == 0,
        "needs root: makes tenant users and runs the client as each");
    for (String user : List.of(ALICE, BOB)) {
      if (sh("id", "-u", user).exit() != 0) {
        DaemonProcess.Result r =
            sh("useradd", "--system", "--no-create-home", "--user-group", user);
        assertEquals(0, r.exit(), r.err());
      }
    }
    // The tenants read the unit and reach the socket through directories they may enter.
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path run = Files.createDirectories(dir.resolve("run"));
    Files.setPosixFilePermissions(run, PosixFilePermissions.fromString("rwxr-xr-x"));
    module = dir.resolve("counter.wasm");
    // The counter, counting long enough to be running still when every client call has been made.
    Files.write(
        module,
        Wat2Wasm.parse(
            DurableRunTest.COUNTER.replace(
                "(i32.const " + DurableRunTest.TOTAL + "))))", "(i32.const 1000000))))")));
    grants = Files.writeString(dir.resolve("grants.json"), DurableRunTest.GRANTS);
    for (Path p : List.of(module, grants)) {
      Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rw-r--r--"));
    }
    Path cfg =
        Files.writeString(
            dir.resolve("sandboxd.json"),
            "{\"policy\":{\"rules\":["
                + "{\"name\":\"operator\",\"uids\":[0],\"ceiling\":\"unrestricted\","
                + "\"permissions\":[\"submit\",\"own_runs\",\"any_run\",\"export\",\"import\","
                + "\"modules\",\"store\",\"status\"]},"
                + "{\"name\":\"tenants\",\"users\":[\""
                + ALICE
                + "\",\""
                + BOB
                + "\"],\"ceiling\":\"unrestricted\","
                + "\"permissions\":[\"submit\",\"own_runs\",\"export\",\"status\"]}]}}");
    daemon =
        DaemonProcess.start(
            dir.resolve("state"), run.resolve("sandboxd.sock"), "--config", cfg.toString());
    // The socket is the daemon's (0660, root's group): opened to the tenants for this test.
    Files.setPosixFilePermissions(daemon.socket, PosixFilePermissions.fromString("rw-rw-rw-"));
    root = new DaemonClient(daemon.socket);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(root, daemon);
  }

  static DaemonProcess.Result sh(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).start();
    byte[] out = p.getInputStream().readAllBytes();
    byte[] err = p.getErrorStream().readAllBytes();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), List.of(cmd).toString());
    return new DaemonProcess.Result(
        p.exitValue(),
        new String(out, StandardCharsets.UTF_8),
        new String(err, StandardCharsets.UTF_8));
  }

  /** sandboxctl as {@code user} (its own uid and group, no others), against the test's daemon. */
  static DaemonProcess.Result as(String user, String... args) throws Exception {
    String uid = sh("id", "-u", user).out().trim();
    String gid = sh("id", "-g", user).out().trim();
    List<String> cmd =
        new ArrayList<>(List.of("setpriv", "--reuid=" + uid, "--regid=" + gid, "--clear-groups"));
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--socket", daemon.socket.toString()));
    cmd.addAll(
        DaemonProcess.java(
            List.of("-Xshare:off"),
            "io.sandboxd.daemon.cli.Sandboxctl",
            all.toArray(new String[0])));
    return sh(cmd.toArray(new String[0]));
  }

  static String detachAs(String user) throws Exception {
    DaemonProcess.Result r =
        as(
            user,
            "run",
            module.toString(),
            "--grants",
            grants.toString(),
            "--entry",
            "step",
            "--detach");
    assertEquals(0, r.exit(), r.err());
    return r.out().trim();
  }

  static void assertRefused(DaemonProcess.Result r, String... words) {
    assertNotEquals(0, r.exit(), r.out());
    for (String w : words) {
      assertTrue(r.err().contains(w), "refusal names " + w + ": " + r.err());
    }
  }

  @Test
  void anotherTenantsSuspendExportAndShowAreRefusedAndTheOwnersAreAllowed() throws Exception {
    String run = detachAs(ALICE);
    Path bobBundle = dir.resolve("bob.bundle");
    assertRefused(as(BOB, "runs", "suspend", run), "tenants", "own runs only", run);
    assertRefused(as(BOB, "runs", "show", run), "tenants", "own runs only");
    assertRefused(as(BOB, "runs", "log", run), "tenants", "own runs only");

    DaemonProcess.Result susp = as(ALICE, "runs", "suspend", run);
    assertEquals(0, susp.exit(), susp.err());
    assertTrue(susp.out().contains(" parked "), susp.out());

    assertRefused(as(BOB, "runs", "export", run, "--bundle", bobBundle.toString()), "tenants", run);
    assertFalse(Files.exists(bobBundle) && Files.size(bobBundle) > 0, "no bundle for bob");
    DaemonProcess.Result show = as(ALICE, "runs", "show", run);
    assertEquals(0, show.exit(), show.err());
    assertTrue(show.out().contains(run), show.out());
    // Bob's listing does not show alice's run; alice's does, still parked: bob took nothing.
    assertFalse(as(BOB, "runs", "list").out().contains(run));
    String listed = as(ALICE, "runs", "list").out();
    assertTrue(listed.lines().anyMatch(l -> l.startsWith(run) && l.contains("parked")), listed);

    Path aliceBundle = Files.createDirectories(dir.resolve("alice-out"));
    sh("chown", ALICE, aliceBundle.toString());
    DaemonProcess.Result ex =
        as(ALICE, "runs", "export", run, "--bundle", aliceBundle.resolve("b").toString());
    assertEquals(0, ex.exit(), ex.err());
    assertTrue(Files.size(aliceBundle.resolve("b")) > 0);
  }

  @Test
  void theOperatorActsOnAnyRunAndATenantIsRefusedWhatItsRuleDoesNotGive() throws Exception {
    String run = detachAs(BOB);
    DaemonProcess.Result op = daemon.ctl("runs", "suspend", run);
    assertEquals(0, op.exit(), op.err());
    // store verify needs permission store, which the tenants' rule does not give.
    assertRefused(as(BOB, "store", "verify"), "tenants", "permission store");
  }

  @Test
  void statusShowsTheRulesInForce() throws Exception {
    String policy = root.stub().getStatus(GetStatusRequest.getDefaultInstance()).getPolicy();
    assertTrue(policy.contains("operator: uids [0]"), policy);
    assertTrue(
        policy.contains("tenants: uids [")
            && policy.contains("permissions [export, own_runs, status, submit]"),
        policy);
    assertFalse(policy.contains("none configured"), policy);
    DaemonProcess.Result s = as(ALICE, "status");
    assertEquals(0, s.exit(), s.err());
    assertTrue(s.out().contains("tenants"), s.out());
  }
}
