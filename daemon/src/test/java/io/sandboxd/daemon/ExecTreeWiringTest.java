package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sandboxd.config.DaemonConfig;
import io.sandboxd.executor.TreeBounds;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bounds of an exec'd tree reach the executor as configured, and default to its own; the node's
 * own files are named for exec to hide.
 */
class ExecTreeWiringTest {
  @Test
  void theConfiguredBoundsAreTheExecutorsAndTheDefaultsAgree() {
    assertEquals(TreeBounds.DEFAULT, Daemon.execTree(DaemonConfig.defaults().exec()));
    DaemonConfig.Exec small =
        new DaemonConfig.Exec(Set.of(), java.util.List.of("/bin"), 1000, 8, 3L << 20);
    assertEquals(new TreeBounds(8, 3L << 20), Daemon.execTree(small));
  }

  @Test
  void theStateDirectoryAndEverySecretFileAreHiddenFromExecdPrograms() {
    DaemonConfig config =
        DaemonConfig.parse(
            ("{\"secrets\":{\"a\":{\"file\":\"api.key\",\"endpoints\":[\"https://a.example/\"]},"
                    + "\"b\":{\"file\":\"/etc/sandboxd/b.key\",\"endpoints\":[\"https://b.example/\"]},"
                    + "\"c\":{\"env\":\"C_KEY\",\"endpoints\":[\"https://c.example/\"]}}}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8));
    java.nio.file.Path state = java.nio.file.Path.of("/var/lib/sandboxd");
    assertEquals(
        java.util.List.of(
            state, state.resolve("secrets/api.key"), java.nio.file.Path.of("/etc/sandboxd/b.key")),
        Daemon.nodePrivate(config, state));
  }

  @Test
  void aPowercapZoneIsHiddenAsTheDeviceDirectoryItsLinkNames(@TempDir java.nio.file.Path dir)
      throws Exception {
    // As sysfs lays it out: the class directory holds links into the devices tree.
    java.nio.file.Path device =
        java.nio.file.Files.createDirectories(dir.resolve("devices/virtual/powercap/zone-0"));
    java.nio.file.Path root = java.nio.file.Files.createDirectories(dir.resolve("class/powercap"));
    java.nio.file.Files.createSymbolicLink(root.resolve("zone-0"), device);
    DaemonConfig configured =
        DaemonConfig.parse(
            ("{\"metering\":{\"powercap_root\":\"" + root + "\"}}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8));
    java.nio.file.Path state = dir.resolve("state");
    assertEquals(
        java.util.List.of(state, device.toRealPath()), Daemon.nodePrivate(configured, state));
  }
}
