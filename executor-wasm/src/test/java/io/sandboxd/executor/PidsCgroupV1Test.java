package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Where the daemon's cgroup lies in a v1 pids hierarchy, read from fixture mountinfo lines. */
class PidsCgroupV1Test {
  private static final String HYBRID_PIDS =
      "38 31 0:33 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup"
          + " rw,pids";
  private static final String UNIFIED =
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";
  private static final String CPU =
      "34 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:11 - cgroup cgroup rw,cpu,cpuacct";
  private static final String ROOT_FS = "25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw";

  private static Optional<Path> locate(List<String> mountinfo, String... cgroups) {
    return PidsCgroupV1.locate(mountinfo, List.of(cgroups));
  }

  @Test
  void aServicesCgroupIsFoundBelowTheHierarchysMountPoint() {
    List<String> mounts = List.of(ROOT_FS, CPU, HYBRID_PIDS, UNIFIED);
    assertEquals(
        Optional.of(Path.of("/sys/fs/cgroup/pids/system.slice/sandboxd.service")),
        locate(
            mounts,
            "9:cpu,cpuacct:/system.slice/sandboxd.service",
            "8:pids:/system.slice/sandboxd.service",
            "0::/system.slice/sandboxd.service"));
    assertEquals(Optional.of(Path.of("/sys/fs/cgroup/pids")), locate(mounts, "8:pids:/"));
  }

  @Test
  void aHostWithoutAV1PidsHierarchyHasNone() {
    // cgroup v2 only: pids, where enabled, is a v2 controller (ProcessTree.bound).
    assertEquals(
        Optional.empty(),
        locate(
            List.of(
                ROOT_FS, "30 25 0:26 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw,nsdelegate"),
            "0::/system.slice/sandboxd.service"));
    // Mounted, but this process is not listed in it; and listed, but not mounted.
    assertEquals(Optional.empty(), locate(List.of(ROOT_FS, HYBRID_PIDS), "9:cpu,cpuacct:/"));
    assertEquals(Optional.empty(), locate(List.of(ROOT_FS, CPU), "8:pids:/"));
    // A named hierarchy that only says pids is not the controller.
    assertEquals(
        Optional.empty(),
        locate(
            List.of(
                "40 31 0:35 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=pids-like,xattr"),
            "1:name=pids-like:/"));
  }

  @Test
  void aContainersMountShowsOnlyItsOwnPartOfTheHierarchy() {
    List<String> mounts =
        List.of("612 600 0:33 /docker/abc /sys/fs/cgroup/pids ro,nosuid - cgroup cgroup rw,pids");
    assertEquals(Optional.of(Path.of("/sys/fs/cgroup/pids")), locate(mounts, "8:pids:/docker/abc"));
    assertEquals(
        Optional.of(Path.of("/sys/fs/cgroup/pids/inner/svc")),
        locate(mounts, "8:pids:/docker/abc/inner/svc"));
    // Outside what the mount shows (a sibling whose name only starts the same): unreachable.
    assertEquals(Optional.empty(), locate(mounts, "8:pids:/docker/abcdef"));
    assertEquals(Optional.empty(), locate(mounts, "8:pids:/"));
  }

  @Test
  void escapedMountPointsAndCombinedControllersAreRead() {
    assertEquals(
        Optional.of(Path.of("/sys/fs/cgroup/my pids/a:b")),
        locate(
            List.of(
                "38 31 0:33 / /sys/fs/cgroup/my\\040pids rw,relatime - cgroup cgroup"
                    + " rw,devices,pids"),
            "8:devices,pids:/a:b"));
  }
}
