package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.sandboxd.enforcer.Enforcer;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.PathMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** An environment's mounts joined to the storage root's namespace by the path broker. */
class WasiMountBrokerTest {
  @TempDir Path tmp;
  Path root;
  Path vol;
  Path deep;
  WasiPathBroker broker;

  @BeforeEach
  void setUp() throws Exception {
    root = Files.createDirectories(tmp.resolve("root")).toRealPath();
    vol = Files.createDirectories(tmp.resolve("vol")).toRealPath();
    deep = Files.createDirectories(tmp.resolve("deep")).toRealPath();
    Files.writeString(vol.resolve("v.txt"), "v");
    // The storage root's own "vol" is shadowed by the mount, and a link into it is refused.
    Files.createDirectories(root.resolve("vol"));
    Files.writeString(root.resolve("vol/shadowed.txt"), "s");
    Files.createSymbolicLink(root.resolve("toshadow"), root.resolve("vol"));
    Files.createSymbolicLink(vol.resolve("out"), root);
    String json =
        "{\"storage\":{\"read\":[\"vol/**\",\"toshadow/**\",\"a/b/**\"],"
            + "\"write\":[\"vol/**\"],\"delete\":[\"vol/**\"]}}";
    broker =
        new WasiPathBroker(
            new Enforcer(Grants.parse(json.getBytes(StandardCharsets.UTF_8))),
            root,
            StorageLedger.NONE,
            List.of(
                new WasiPathBroker.Mount("vol", vol, StorageLedger.NONE),
                new WasiPathBroker.Mount("a/b", deep, StorageLedger.NONE)));
  }

  @Test
  void mountsAreNumberedAfterTheRootAndStayOpen() {
    assertEquals(5, broker.lastPreopenFd());
    assertEquals("vol", broker.opened(4).rel());
    assertEquals("a/b", broker.opened(5).rel());
  }

  @Test
  void aPathLiesInTheLongestMountAboveIt() {
    WasiPathBroker.Brokered viaRoot =
        broker.resolve(WasiPathBroker.ROOT_FD, "vol/v.txt", false, PathMode.READ);
    assertEquals(Errno.SUCCESS, viaRoot.errno());
    assertEquals(vol.resolve("v.txt"), viaRoot.host());
    assertEquals(4, viaRoot.fd());
    assertEquals("v.txt", viaRoot.forChicory());
    WasiPathBroker.Brokered viaMount = broker.resolve(4, "v.txt", false, PathMode.READ);
    assertEquals("vol/v.txt", viaMount.rel());
    assertEquals(vol.resolve("v.txt"), viaMount.host());
    assertSame(broker.preopenOf("a/b/x"), broker.resolve(5, "x", false, PathMode.READ).at());
    assertEquals(".", broker.resolve(5, ".", false, PathMode.READ).forChicory());
    // "volume" is not beneath "vol".
    assertEquals(0, broker.preopenOf("volume/x").rel().length());
  }

  @Test
  void theGlobsSeeTheGuestPath() {
    assertEquals(Errno.SUCCESS, broker.resolve(4, "new.txt", false, PathMode.WRITE).errno());
    assertEquals(Errno.ACCES, broker.resolve(5, "new.txt", false, PathMode.WRITE).errno());
  }

  @Test
  void aMountPointIsReadOnlyLikeTheRoot() {
    assertEquals(Errno.SUCCESS, broker.resolve(4, ".", false, PathMode.READ).errno());
    assertEquals(Errno.ACCES, broker.decide("vol", PathMode.DELETE));
    assertEquals(Errno.ACCES, broker.decide("vol", PathMode.WRITE));
  }

  @Test
  void linksMayNotLeaveAMountNorReachWhatOneShadows() {
    // A link in the mount to the storage root: outside the mount's directory.
    assertEquals(Errno.NOTCAPABLE, broker.resolve(4, "out/x", false, PathMode.READ).errno());
    // A link in the storage root to its own "vol", which the mount shadows: two names for a file.
    assertEquals(
        Errno.NOTCAPABLE,
        broker
            .resolve(WasiPathBroker.ROOT_FD, "toshadow/shadowed.txt", false, PathMode.READ)
            .errno());
    assertEquals(
        Errno.NOTCAPABLE,
        broker.resolve(WasiPathBroker.ROOT_FD, "toshadow", true, PathMode.READ).errno());
  }
}
