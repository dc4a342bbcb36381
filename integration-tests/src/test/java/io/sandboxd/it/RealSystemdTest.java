package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Capability;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.testcontainers.containers.Container.ExecResult;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.utility.DockerImageName;
import org.testcontainers.utility.MountableFile;

/**
 * Issue 13 item 4: the packaged daemon installed with {@code install.sh} into a Debian container
 * whose PID 1 is real systemd, and driven there as an operator would: systemctl, journalctl and
 * sandboxctl run as users in and out of the {@code sandboxd} group. The image comes from {@code
 * bin/systemd-image} (debootstrap, cached by content); the test command starts the Docker engine.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RealSystemdTest {
  static GenericContainer<?> node;

  @BeforeAll
  static void boot() throws Exception {
    Process build =
        new ProcessBuilder(DaemonProcess.ROOT.resolve("bin/systemd-image").toString())
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    String image = new String(build.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertTrue(build.waitFor(30, TimeUnit.MINUTES), "bin/systemd-image did not finish");
    assertEquals(0, build.exitValue(), "bin/systemd-image failed");
    Path dist = DaemonProcess.ROOT.resolve("systemd/src/main/dist");
    node =
        new GenericContainer<>(DockerImageName.parse(image))
            .withCommand("/sbin/init")
            .withCreateContainerCmdModifier(
                cmd ->
                    cmd.getHostConfig()
                        // SYS_RAWIO as a real node has it, for the unit to hand the daemon.
                        .withCapAdd(Capability.SYS_ADMIN, Capability.SYS_RAWIO)
                        .withSecurityOpts(List.of("seccomp=unconfined"))
                        .withBinds(Bind.parse("/sys/fs/cgroup:/sys/fs/cgroup:rw"))
                        .withTmpFs(Map.of("/run", "rw", "/run/lock", "rw"))
                        .withNetworkMode("none"))
            .withCopyFileToContainer(
                MountableFile.forHostPath(DaemonProcess.JAR.toAbsolutePath()),
                "/opt/sandboxd/sandboxd.jar")
            .withCopyFileToContainer(
                MountableFile.forHostPath(dist.toAbsolutePath(), 0755), "/opt/sandboxd/dist")
            .withCopyFileToContainer(
                MountableFile.forHostPath(DaemonProcess.ROOT.resolve("examples").toAbsolutePath()),
                "/opt/sandboxd/examples")
            .withStartupTimeout(Duration.ofMinutes(2));
    node.start();
    awaitShell("systemctl is-system-running | grep -qE 'running|degraded'", 60);
    ExecResult install = sh("/opt/sandboxd/dist/install.sh /opt/sandboxd/sandboxd.jar");
    assertEquals(0, install.getExitCode(), install.toString());
    ExecResult users =
        sh(
            "useradd -m -G sandboxd alice && useradd -m -G sandboxd carol && useradd -m bob"
                + " && chmod -R a+rX /opt/sandboxd/examples");
    assertEquals(0, users.getExitCode(), users.toString());
  }

  @AfterAll
  static void shutdown() {
    if (node != null) {
      node.stop();
    }
  }

  static ExecResult sh(String command) throws Exception {
    return node.execInContainer("bash", "-c", command);
  }

  /** Runs {@code command} as {@code user} with that user's groups, as a login would give them. */
  static ExecResult as(String user, String command) throws Exception {
    return sh("setpriv --reuid " + user + " --regid " + user + " --init-groups " + command);
  }

  /** The installed example's grants. */
  static final String HELLO_GRANTS = "/opt/sandboxd/examples/hello.grants.json";

  /**
   * `sandboxctl run` of the installed hello.wasm as {@code user}, under {@code grants} (and flags).
   */
  static ExecResult runHello(String user, String grants) throws Exception {
    return as(user, "sandboxctl run /opt/sandboxd/examples/hello.wasm --grants " + grants);
  }

  static void awaitShell(String condition, int seconds) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    ExecResult last = null;
    while (System.nanoTime() < deadline) {
      last = sh(condition);
      if (last.getExitCode() == 0) {
        return;
      }
      Thread.sleep(500);
    }
    throw new AssertionError("not true within " + seconds + " s: " + condition + "\n" + last);
  }

  static String show(String property) throws Exception {
    return sh("systemctl show -p " + property + " --value sandboxd").getStdout().trim();
  }

  @Test
  @Order(1)
  void startsAndReportsReadyUnderSystemd() throws Exception {
    ExecResult start = sh("systemctl start sandboxd");
    // Type=notify: start returns only once the daemon sent READY=1 (or failed).
    assertEquals(0, start.getExitCode(), start + "\n" + sh("journalctl -u sandboxd --no-pager"));
    assertEquals("active", show("ActiveState"));
    assertTrue(show("StatusText").startsWith("serving"), show("StatusText"));
  }

  @Test
  @Order(2)
  void aGroupMemberRunsAUnitAndItsExportVerifies() throws Exception {
    ExecResult run = runHello("alice", HELLO_GRANTS + " --json");
    assertEquals(0, run.getExitCode(), run.toString());
    String runId = field(run.getStdout(), "run_id");
    ExecResult verify =
        as(
            "alice",
            "bash -c 'sandboxctl runs show "
                + runId
                + " --export | sandboxctl verify - --signer"
                + " \"$(sandboxctl status | awk \"/^public key/{print \\$3}\")\"'");
    assertEquals(0, verify.getExitCode(), verify.toString());
  }

  @Test
  @Order(3)
  void aUserOutsideTheGroupGetsAClearPermissionError() throws Exception {
    ExecResult run = runHello("bob", HELLO_GRANTS);
    assertNotEquals(0, run.getExitCode(), run.toString());
    assertTrue(run.getStderr().toLowerCase().contains("permission denied"), run.getStderr());
    assertTrue(run.getStderr().contains("/run/sandboxd"), run.getStderr());
  }

  @Test
  @Order(4)
  void aUidWhosePolicyForbidsExecIsRefusedNamingTheRule() throws Exception {
    // carol's ceiling is exactly hello's grants (no process section, so no exec); alice has none.
    String ceiling = sh("cat /opt/sandboxd/examples/hello.grants.json").getStdout().trim();
    String policy =
        "{\"policy\":{\"rules\":["
            + "{\"name\":\"alice-any\",\"users\":[\"alice\"],\"ceiling\":\"unrestricted\"},"
            + "{\"name\":\"carol-no-exec\",\"users\":[\"carol\"],\"ceiling\":"
            + ceiling
            + "}]}}";
    put(policy.getBytes(StandardCharsets.UTF_8), "/etc/sandboxd/sandboxd.json");
    put(execGrants(ceiling, "ls"), "/opt/sandboxd/exec.grants.json");
    ExecResult restart = sh("systemctl restart sandboxd");
    assertEquals(0, restart.getExitCode(), restart + "\n" + journal());
    ExecResult refused = runHello("carol", "/opt/sandboxd/exec.grants.json");
    assertNotEquals(0, refused.getExitCode(), refused.toString());
    String why = refused.getStderr();
    assertTrue(why.contains("PERMISSION_DENIED"), why);
    assertTrue(why.contains("rule \"carol-no-exec\"") && why.contains("$.process.exec"), why);
    // The same unit within her ceiling runs: the refusal was the exec grant, not carol.
    ExecResult within = runHello("carol", HELLO_GRANTS);
    assertEquals(0, within.getExitCode(), within.toString());
    ExecResult alice = runHello("alice", "/opt/sandboxd/exec.grants.json");
    assertEquals(0, alice.getExitCode(), alice + "\n" + journal());
  }

  @Test
  @Order(5)
  void aStoppedJvmIsRestartedByTheWatchdog() throws Exception {
    // A short watchdog keeps the test fast; the unit's own WatchdogSec is what gets exercised.
    ExecResult dropIn =
        sh(
            "mkdir -p /etc/systemd/system/sandboxd.service.d && printf '[Service]\\nWatchdogSec=5s\\n'"
                + " > /etc/systemd/system/sandboxd.service.d/test.conf && systemctl daemon-reload"
                + " && systemctl restart sandboxd");
    assertEquals(0, dropIn.getExitCode(), dropIn + "\n" + journal());
    assertEquals("5s", show("WatchdogUSec"));
    String pid = show("MainPID");
    long restartsBefore = Long.parseLong(show("NRestarts"));
    // A few pings first: the daemon answers its probe under systemd before we freeze it.
    Thread.sleep(6_000);
    assertEquals(pid, show("MainPID"), journal());
    assertEquals(0, sh("kill -STOP " + pid).getExitCode());
    // 5 s to miss the pings, RestartSec=2s, then the JVM's start: well inside a minute.
    awaitShell(
        "p=$(systemctl show -p MainPID --value sandboxd); [ \"$p\" != 0 ] && [ \"$p\" != "
            + pid
            + " ] && systemctl is-active -q sandboxd",
        90);
    assertTrue(Long.parseLong(show("NRestarts")) >= restartsBefore + 1, show("NRestarts"));
    assertTrue(journal().toLowerCase().contains("watchdog timeout"), journal());
    ExecResult run = runHello("alice", HELLO_GRANTS);
    assertEquals(0, run.getExitCode(), run.toString());
  }

  @Test
  @Order(6)
  void anExecRunsConfinedUnderTheUnitsHardening() throws Exception {
    // The unit file's sandboxing (ProtectControlGroups, RestrictNamespaces) must leave exec a way
    // to confine its children: an exec that cannot be confined is never started.
    put(
        execGrants(sh("cat " + HELLO_GRANTS).getStdout().trim(), "echo", "cat"),
        "/opt/sandboxd/echo.grants.json");
    // The second program reads the node key, as the daemon's user may: Landlock must refuse it.
    put(
        ExecEscapeTest.execUnit(
            "{\"program\":\"echo\",\"args\":[\"confined\"]}",
            "{\"program\":\"cat\",\"args\":[\"/var/lib/sandboxd/keys/node.ed25519\"]}",
            "{\"program\":\"cat\",\"args\":[\"/proc/self/status\"]}"),
        "/opt/sandboxd/echo.wasm");
    ExecResult run =
        as(
            "alice",
            "sandboxctl run /opt/sandboxd/echo.wasm --grants /opt/sandboxd/echo.grants.json");
    String said = run + "\n" + journal();
    assertEquals(0, run.getExitCode(), said);
    String out = run.getStdout() + run.getStderr();
    assertTrue(out.contains("s=0"), said);
    // base64 of "confined\n", echo's output: the program ran and exited 0.
    assertTrue(out.contains("\"exit\":0") && out.contains("Y29uZmluZWQK"), said);
    assertTrue(out.contains("\"exit\":1"), "an exec'd program read the node key: " + said);
    // The unit gives the daemon CAP_SYS_RAWIO as an ambient capability, for the MSR meters: an
    // exec'd program must not inherit it (nor any other).
    String status =
        java.util.regex.Pattern.compile("\"stdout\":\"([A-Za-z0-9+/=]*)\"")
            .matcher(out)
            .results()
            .map(
                m ->
                    new String(
                        java.util.Base64.getDecoder().decode(m.group(1)), StandardCharsets.UTF_8))
            .filter(text -> text.contains("CapAmb:"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no status of the exec'd program: " + said));
    for (String set : List.of("CapInh", "CapPrm", "CapEff", "CapAmb")) {
      assertTrue(
          status.contains(set + ":\t0000000000000000"), set + " of an exec'd program: " + status);
    }
  }

  /** {@code grants} (a JSON object) with exec of {@code programs} allowed. */
  static byte[] execGrants(String grants, String... programs) {
    return (grants.substring(0, grants.lastIndexOf('}'))
            + ",\"process\":{\"exec\":true,\"programs\":[\""
            + String.join("\",\"", programs)
            + "\"],\"max_processes\":1}}")
        .getBytes(StandardCharsets.UTF_8);
  }

  /** Writes {@code bytes} to {@code path} in the container, readable by everyone. */
  static void put(byte[] bytes, String path) {
    node.copyFileToContainer(org.testcontainers.images.builder.Transferable.of(bytes, 0644), path);
  }

  static String journal() throws Exception {
    return sh("journalctl -u sandboxd --no-pager").getStdout();
  }

  @Test
  @Order(9)
  void stopIsCleanAndTheJournalHasTheDaemonsLines() throws Exception {
    ExecResult stop = sh("systemctl stop sandboxd");
    assertEquals(0, stop.getExitCode(), stop.toString());
    assertEquals("inactive", show("ActiveState"));
    assertEquals("success", show("Result"));
    String journal = sh("journalctl -u sandboxd --no-pager -o cat").getStdout();
    assertTrue(journal.contains("sandboxd serving on /run/sandboxd/sandboxd.sock"), journal);
    // The image has libsodium23: under the unit's hardening the node still signs through it.
    assertTrue(journal.contains("signing: libsodium "), journal);
  }

  /** The value of a top-level string field in sandboxctl's JSON output. */
  static String field(String json, String name) {
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("\"" + name + "\"\\s*:\\s*\"([^\"]+)\"").matcher(json);
    assertTrue(m.find(), json);
    return m.group(1);
  }
}
