package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 13 item 3: with the shipped tmpfiles.d rule's mode and group on the powercap counters, the
 * daemon running as an unprivileged service user (as the unit runs it) reads the meter, and its
 * receipts carry the meter's provenance, not Estimator; with the kernel's root-only mode the same
 * daemon falls back to the estimator. Needs root to run the daemon as another user (setpriv).
 */
class MeterUnderUnitTest {
  static final int SERVICE_UID = 65534;
  static final int SERVICE_GID = 65534;

  private final List<Process> started = new ArrayList<>();
  private Path base;

  @AfterEach
  void stop() throws Exception {
    for (Process p : started) {
      p.destroy();
      p.waitFor(30, TimeUnit.SECONDS);
      p.destroyForcibly();
    }
  }

  /** The mode the shipped tmpfiles.d line gives energy_uj files, e.g. "0440". */
  static String shippedCounterMode() throws Exception {
    Path conf = DaemonProcess.ROOT.resolve("systemd/src/main/dist/tmpfiles.d/sandboxd.conf");
    String line =
        Files.readAllLines(conf, StandardCharsets.UTF_8).stream()
            .filter(l -> l.startsWith("z /sys/class/powercap/*/energy_uj "))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no energy_uj rule in " + conf));
    String[] f = line.split("\\s+");
    assertEquals("sandboxd", f[4], "the counters' group is the service's group");
    return f[2];
  }

  static String perms(String octal) {
    int m = Integer.parseInt(octal, 8);
    String all = "rwxrwxrwx";
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < 9; i++) {
      b.append((m & (1 << (8 - i))) != 0 ? all.charAt(i) : '-');
    }
    return b.toString();
  }

  /**
   * A powercap tree as the kernel lays it out; counters owned by root with {@code mode}, group
   * {@code gid}.
   */
  Path powercap(String name, String mode, int gid) throws Exception {
    Path root = Files.createDirectories(base.resolve(name));
    GroupPrincipal group =
        root.getFileSystem()
            .getUserPrincipalLookupService()
            .lookupPrincipalByGroupName(Integer.toString(gid));
    for (String[] z : new String[][] {{"intel-rapl:0", "package-0"}, {"intel-rapl:0:0", "core"}}) {
      Path d = Files.createDirectories(root.resolve(z[0]));
      Files.writeString(d.resolve("name"), z[1] + "\n");
      Files.writeString(d.resolve("max_energy_range_uj"), "262143328850\n");
      Path e = Files.writeString(d.resolve("energy_uj"), "1000000\n");
      Files.getFileAttributeView(e, PosixFileAttributeView.class).setGroup(group);
      Files.setPosixFilePermissions(e, PosixFilePermissions.fromString(perms(mode)));
    }
    return root;
  }

  /** `sandboxd serve` as uid/gid 65534 (setpriv), state and socket owned by that user. */
  DaemonClient startAsServiceUser(String name, Path powercap) throws Exception {
    Path state = Files.createDirectories(base.resolve(name + "-state"));
    Path run = Files.createDirectories(base.resolve(name + "-run"));
    Path config = base.resolve(name + ".json");
    Files.writeString(
        config,
        "{\"metering\": {\"powercap_root\": \"" + powercap + "\", \"nvml_library\": \"\"}}");
    UserPrincipal user =
        base.getFileSystem()
            .getUserPrincipalLookupService()
            .lookupPrincipalByName(Integer.toString(SERVICE_UID));
    for (Path p : List.of(state, run)) {
      Files.setOwner(p, user);
      Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwx------"));
    }
    Path socket = run.resolve("sandboxd.sock");
    List<String> cmd =
        new ArrayList<>(
            List.of(
                "setpriv", "--reuid=" + SERVICE_UID, "--regid=" + SERVICE_GID, "--clear-groups"));
    cmd.addAll(
        DaemonProcess.serveCommand(
            List.of("-Djna.tmpdir=" + state.resolve("jna")),
            state,
            socket,
            "--config",
            config.toString()));
    Path log = base.resolve(name + ".log");
    Process p =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    started.add(p);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (!Files.readString(log).contains("sandboxd serving on")) {
      assertTrue(p.isAlive(), Files.readString(log));
      assertTrue(System.nanoTime() < deadline, Files.readString(log));
      Thread.sleep(50);
    }
    return new DaemonClient(socket);
  }

  static ClassEnergy cpuEnergy(SubmitReply r) {
    return Receipt.fromCore(Envelope.fromJson(CanonicalJson.parse(r.getReceipt())).core())
        .energy()
        .get(DeviceClass.Cpu);
  }

  @Test
  void theShippedCounterModeLetsTheServiceUserMeterAndTheKernelDefaultDoesNot() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        "root".equals(System.getProperty("user.name")),
        "needs root to start the daemon as another user");
    // World-traversable, so that the service user reaches its own directories below it.
    base = Files.createTempDirectory(Path.of("/tmp"), "sandboxd-meters-");
    Files.setPosixFilePermissions(base, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path shipped = powercap("shipped", shippedCounterMode(), SERVICE_GID);
    Path kernel = powercap("kernel", "0400", 0);
    byte[] hello = Submissions.exampleUnit("hello");
    String grants = Submissions.exampleGrants("hello");

    try (DaemonClient c = startAsServiceUser("shipped", shipped)) {
      ClassEnergy e = cpuEnergy(Submissions.submit(c, hello, grants));
      assertTrue(e.provenance() != Provenance.Estimator, e.toString());
      assertTrue(e.source().contains("rapl"), e.toString());
    }
    try (DaemonClient c = startAsServiceUser("kernel", kernel)) {
      ClassEnergy e = cpuEnergy(Submissions.submit(c, hello, grants));
      assertEquals(Provenance.Estimator, e.provenance(), e.toString());
    }
    String said = Files.readString(base.resolve("kernel.log"));
    assertTrue(said.contains("permission denied"), said);
  }
}
