package io.sandboxd.systemd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checks the shipped unit with the real {@code systemd-analyze}. PID 1 is not systemd here, so it
 * verifies offline against a root staged by install.sh: the ExecStart launcher really exists there,
 * and the host's own units (sysinit.target and friends) are copied in for the dependencies.
 */
class SystemdUnitTest {
  @TempDir Path tmp;

  /** install.sh's tree plus the host's unit directory, as systemd-analyze --root expects it. */
  private Path stagedRoot() throws IOException, InterruptedException {
    Path root = tmp.resolve("root");
    Path jar = tmp.resolve("sandboxd.jar");
    Files.write(jar, new byte[] {'P', 'K'});
    SystemTools.stage(root, jar);
    Path hostUnits =
        Stream.of("/usr/lib/systemd/system", "/lib/systemd/system")
            .map(Path::of)
            .filter(p -> Files.isRegularFile(p.resolve("sysinit.target")))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no host unit directory with sysinit.target"));
    Path units = root.resolve("usr/lib/systemd/system");
    // Copies, not links: systemd refuses symlinked mount/slice units and resolves absolute links
    // inside --root.
    try (Stream<Path> list = Files.list(hostUnits)) {
      for (Path u : (Iterable<Path>) list::iterator) {
        Path target = units.resolve(u.getFileName().toString());
        if (Files.isRegularFile(u) && !Files.exists(target)) {
          Files.copy(u, target, StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    }
    return root;
  }

  private static SystemTools.Result verify(Path root) throws IOException, InterruptedException {
    return SystemTools.run(
        Map.of(),
        SystemTools.tool("systemd-analyze"),
        "verify",
        "--man=no",
        "--generators=no",
        "--root=" + root,
        "sandboxd.service");
  }

  /** Lines systemd-analyze printed about our unit or its launcher (warnings do not fail it). */
  private static List<String> complaints(SystemTools.Result r) {
    return r.output().lines().filter(l -> l.contains("sandboxd")).toList();
  }

  @Test
  void shippedUnitVerifiesWithoutWarnings() throws Exception {
    SystemTools.Result r = verify(stagedRoot());
    assertEquals(0, r.exit(), r.output());
    assertEquals(List.of(), complaints(r), r.output());
  }

  @Test
  void verifyCatchesAnUnknownKeyAndAMissingLauncher() throws Exception {
    // The check above is only worth something if the same invocation does complain.
    Path root = stagedRoot();
    Path unit = root.resolve("usr/lib/systemd/system/sandboxd.service");
    Files.writeString(
        unit,
        Files.readString(unit).replace("LockPersonality=yes", "LockPersonality=yes\nBogusKey=1"));
    SystemTools.Result bogus = verify(root);
    assertTrue(complaints(bogus).stream().anyMatch(l -> l.contains("BogusKey")), bogus.output());

    Files.delete(root.resolve("usr/lib/sandboxd/bin/sandboxd"));
    SystemTools.Result missing = verify(root);
    assertNotEquals(0, missing.exit(), missing.output());
    assertTrue(missing.output().contains("/usr/lib/sandboxd/bin/sandboxd"), missing.output());
  }

  @Test
  void unitDeclaresWhatTheDaemonRelies() throws Exception {
    List<String> lines =
        Files.readAllLines(SystemTools.DIST.resolve("sandboxd.service"), StandardCharsets.UTF_8)
            .stream()
            .filter(l -> !l.startsWith("#"))
            .toList();
    for (String required :
        List.of(
            "Type=notify",
            "ExecStart=/usr/lib/sandboxd/bin/sandboxd serve",
            "User=sandboxd",
            "Group=sandboxd",
            "StateDirectory=sandboxd",
            "RuntimeDirectory=sandboxd",
            "RuntimeDirectoryMode=0750",
            "ConfigurationDirectory=sandboxd",
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "ProtectHome=yes",
            "PrivateTmp=yes",
            // The meters' device nodes and nothing else (PrivateDevices=yes would hide them).
            "DevicePolicy=closed",
            "DeviceAllow=char-cpu/msr r",
            "DeviceAllow=/dev/nvidiactl rw",
            "DeviceAllow=char-nvidia-frontend rw",
            "DeviceAllow=/dev/nvidia-uvm rw",
            "CapabilityBoundingSet=CAP_SYS_RAWIO",
            "AmbientCapabilities=CAP_SYS_RAWIO",
            "WatchdogSec=30s",
            "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
            "LockPersonality=yes",
            // exec confines its programs in cgroups below the daemon's: the subtree is its own.
            "Delegate=yes",
            "ProtectControlGroups=no")) {
      assertTrue(lines.contains(required), "unit lacks " + required);
    }
    assertTrue(
        lines.stream()
            .anyMatch(l -> l.contains("JAVA_TOOL_OPTIONS=-Djna.tmpdir=/var/lib/sandboxd")),
        "unit must point JNA at the state directory");
    // The JIT needs writable+executable memory: W^X would kill the JVM.
    assertFalse(lines.stream().anyMatch(l -> l.startsWith("MemoryDenyWriteExecute")));
    assertFalse(lines.contains("PrivateDevices=yes"), "PrivateDevices hides the meters");
    // Exactly one capability, the one the msr driver checks.
    assertEquals(
        List.of("AmbientCapabilities=CAP_SYS_RAWIO"),
        lines.stream().filter(l -> l.startsWith("AmbientCapabilities=")).toList());
  }

  @Test
  void theStartUpCacheIsWhereTheLauncherLooksAndOnlyRootWritesIt() throws Exception {
    // The class-data archive is code the JVM maps: the service must not be able to rewrite it.
    String cacheDir = "/var/cache/sandboxd";
    // The launcher reads SANDBOXD_CACHE set but empty as no cache (the repository's bin/sandboxd
    // with SANDBOXD_START_CACHE=off); unset, both default to the same directory.
    for (String[] script :
        List.of(
            new String[] {"bin/sandboxd", "${SANDBOXD_CACHE-"},
            new String[] {"bin/build-start-cache", "${SANDBOXD_CACHE:-"})) {
      String text = Files.readString(SystemTools.DIST.resolve(script[0]));
      assertTrue(
          text.contains("cache=\"" + script[1] + cacheDir + "}\""),
          script[0] + " must use " + cacheDir);
    }
    List<String> lines =
        Files.readAllLines(SystemTools.DIST.resolve("sandboxd.service"), StandardCharsets.UTF_8)
            .stream()
            .filter(l -> !l.startsWith("#"))
            .toList();
    // ProtectSystem=strict leaves /var/cache read-only unless the unit opens it up.
    assertTrue(lines.contains("ProtectSystem=strict"));
    for (String l : lines) {
      assertFalse(
          (l.startsWith("ReadWritePaths=") || l.startsWith("CacheDirectory="))
              && (l.contains(cacheDir) || l.contains("=sandboxd")),
          "the unit makes the start-up cache writable: " + l);
      assertFalse(
          l.startsWith("InaccessiblePaths=") && l.contains("/var/cache"),
          "the unit hides the start-up cache: " + l);
    }
    assertTrue(
        Files.readString(SystemTools.DIST.resolve("install.sh"))
            .contains("/usr/lib/sandboxd/bin/build-start-cache"),
        "a live install builds the cache");
  }

  @Test
  void tmpfilesMakesPowercapCountersGroupReadable() throws Exception {
    Path root = tmp.resolve("meters-root");
    Files.createDirectories(root.resolve("etc"));
    SystemTools.sysusers(root);
    // A powercap tree as the kernel leaves it since the PLATYPUS fix: energy_uj root-only.
    List<Path> counters = new java.util.ArrayList<>();
    for (String zone : List.of("intel-rapl:0", "intel-rapl:0:0", "intel-rapl:1")) {
      Path z = Files.createDirectories(root.resolve("sys/class/powercap").resolve(zone));
      Path f = Files.writeString(z.resolve("energy_uj"), "12345\n");
      Files.setPosixFilePermissions(
          f, java.nio.file.attribute.PosixFilePermissions.fromString("r--------"));
      Path name = Files.writeString(z.resolve("name"), "package-0\n");
      Files.setPosixFilePermissions(
          name, java.nio.file.attribute.PosixFilePermissions.fromString("r--r--r--"));
      counters.add(f);
    }
    SystemTools.tmpfiles(root);
    String gid = SystemTools.sandboxdEntry(root.resolve("etc/group"))[2];
    for (Path f : counters) {
      assertEquals(
          "r--r-----",
          java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(f)),
          f.toString());
      assertEquals(Integer.parseInt(gid), Files.getAttribute(f, "unix:gid"), f.toString());
      assertEquals(0, Files.getAttribute(f, "unix:uid"), f.toString());
    }
    // Nothing else in the tree changed.
    assertEquals(
        "r--r--r--",
        java.nio.file.attribute.PosixFilePermissions.toString(
            Files.getPosixFilePermissions(root.resolve("sys/class/powercap/intel-rapl:0/name"))));
  }

  @Test
  void udevRuleGivesTheMetersToGroupSandboxd() throws Exception {
    List<String> rules =
        Files.readAllLines(
                SystemTools.DIST.resolve("udev/60-sandboxd-meters.rules"), StandardCharsets.UTF_8)
            .stream()
            .filter(l -> !l.startsWith("#") && !l.isBlank())
            .toList();
    assertTrue(
        rules.contains("SUBSYSTEM==\"msr\", GROUP=\"sandboxd\", MODE=\"0640\""), rules.toString());
    assertTrue(
        rules.stream()
            .anyMatch(
                l ->
                    l.startsWith("SUBSYSTEM==\"powercap\"")
                        && l.contains("chgrp sandboxd /sys%p/energy_uj")
                        && l.contains("chmod 0440 /sys%p/energy_uj")),
        rules.toString());
  }

  @Test
  void hardeningStaysBelowExposureThreshold() throws Exception {
    // systemd-analyze security scores 0 (locked down) to 10 (unprotected); --threshold is in
    // tenths.
    SystemTools.Result r =
        SystemTools.run(
            Map.of(),
            SystemTools.tool("systemd-analyze"),
            "security",
            "--offline=yes",
            "--threshold=35",
            "--no-pager",
            "--root=" + stagedRoot(),
            "sandboxd.service");
    assertEquals(0, r.exit(), r.output());
    assertTrue(r.output().contains("Overall exposure level for sandboxd.service"), r.output());
  }

  @Test
  void sysusersCreatesTheServiceUserAndGroup() throws Exception {
    Path root = tmp.resolve("sysroot");
    Files.createDirectories(root.resolve("etc"));
    SystemTools.sysusers(root);
    String passwd = Files.readString(root.resolve("etc/passwd"));
    String group = Files.readString(root.resolve("etc/group"));
    String user = passwd.lines().filter(l -> l.startsWith("sandboxd:")).findFirst().orElseThrow();
    String[] u = user.split(":", -1);
    assertEquals("/var/lib/sandboxd", u[5], user);
    assertTrue(u[6].endsWith("nologin"), user);
    String grp = group.lines().filter(l -> l.startsWith("sandboxd:")).findFirst().orElseThrow();
    assertEquals(grp.split(":")[2], u[3], "the user's primary group is group sandboxd");
    assertTrue(Integer.parseInt(u[2]) < 1000, "a system uid: " + user);
  }

  @Test
  void tmpfilesCreatesPrivateStateDirectories() throws Exception {
    Path root = tmp.resolve("sysroot");
    Files.createDirectories(root.resolve("etc"));
    SystemTools.sysusers(root);
    SystemTools.tmpfiles(root);
    String uid = SystemTools.sandboxdEntry(root.resolve("etc/passwd"))[2];
    for (String d : List.of("var/lib/sandboxd", "var/lib/sandboxd/keys", "var/lib/sandboxd/jna")) {
      Path p = root.resolve(d);
      assertTrue(Files.isDirectory(p), d);
      // tmpfiles resolves the owner in the staged root's passwd, not the host's.
      assertEquals(Integer.parseInt(uid), Files.getAttribute(p, "unix:uid"), d);
      assertEquals(
          "rwx------",
          java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(p)),
          d);
    }
  }
}
