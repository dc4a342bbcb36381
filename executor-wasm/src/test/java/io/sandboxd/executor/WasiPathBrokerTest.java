package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.enforcer.Enforcer;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.PathMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The path decisions behind the WASI imports, without a guest. */
class WasiPathBrokerTest {
  @TempDir Path tmp;
  Path root;
  WasiPathBroker broker;

  @BeforeEach
  void setUp() throws Exception {
    root = Files.createDirectories(tmp.resolve("root")).toRealPath();
    Path outside = Files.createDirectories(tmp.resolve("outside"));
    Files.writeString(outside.resolve("x"), "x");
    Files.createDirectories(root.resolve("data/in"));
    Files.writeString(root.resolve("data/in/a.txt"), "a");
    Files.createSymbolicLink(root.resolve("data/out"), outside);
    Files.createSymbolicLink(root.resolve("data/link"), root.resolve("data/in/a.txt"));
    Files.createSymbolicLink(root.resolve("data/toprivate"), root.resolve("private.txt"));
    Files.writeString(root.resolve("private.txt"), "p");
    Files.createSymbolicLink(root.resolve("data/dangling"), outside.resolve("nothing"));
    String json = "{\"storage\":{\"read\":[\"data/**\"],\"write\":[\"data/in/*\"],\"delete\":[]}}";
    broker =
        new WasiPathBroker(
            new Enforcer(Grants.parse(json.getBytes(StandardCharsets.UTF_8))),
            root,
            StorageLedger.NONE);
  }

  int errno(String path, boolean follow, PathMode... modes) {
    return broker.resolve(WasiPathBroker.ROOT_FD, path, follow, modes).errno();
  }

  @Test
  void lexicalEscapesAreNotCapableWhateverTheGlobs() {
    assertEquals(Errno.NOTCAPABLE, errno("../root/data/in/a.txt", true, PathMode.READ));
    assertEquals(Errno.NOTCAPABLE, errno("data/../data/in/a.txt", true, PathMode.READ));
    assertEquals(Errno.NOTCAPABLE, errno("/data/in/a.txt", true, PathMode.READ));
    assertEquals(Errno.INVAL, errno("data/in/a\0.txt", true, PathMode.READ));
    assertEquals(Errno.NOENT, errno("", true, PathMode.READ));
  }

  @Test
  void grantsDecideBeforeTheHostIsAsked() {
    assertEquals(Errno.SUCCESS, errno("data/in/a.txt", true, PathMode.READ));
    assertEquals(Errno.SUCCESS, errno("./data//in/./a.txt", true, PathMode.READ));
    assertEquals(Errno.SUCCESS, errno("data/in/new.txt", false, PathMode.WRITE));
    assertEquals(Errno.ACCES, errno("data/other.txt", false, PathMode.WRITE));
    assertEquals(Errno.ACCES, errno("data/in/a.txt", false, PathMode.DELETE));
    assertEquals(Errno.ACCES, errno("private.txt", true, PathMode.READ));
    // A missing directory on the way is only reported once the path is granted.
    assertEquals(Errno.NOENT, errno("data/nope/x", false, PathMode.READ));
    assertEquals(Errno.ACCES, errno("nope/x", false, PathMode.READ));
  }

  @Test
  void symlinksMustStayBeneathTheRootAndBothNamesAreDecided() {
    assertEquals(Errno.NOTCAPABLE, errno("data/out/x", true, PathMode.READ));
    assertEquals(Errno.NOTCAPABLE, errno("data/out", true, PathMode.READ));
    assertEquals(Errno.NOTCAPABLE, errno("data/dangling", true, PathMode.READ));
    WasiPathBroker.Brokered inside =
        broker.resolve(WasiPathBroker.ROOT_FD, "data/link", true, PathMode.READ);
    assertEquals("data/in/a.txt", inside.rel());
    // Granted by name, but the link leads to a path no glob grants.
    assertEquals(Errno.ACCES, errno("data/toprivate", true, PathMode.READ));
    // Not following: the link itself is the object (unlink, lstat, rename).
    assertEquals("data/out", broker.resolve(WasiPathBroker.ROOT_FD, "data/out", false).rel());
  }

  @Test
  void theRootMayBeReadButNotWrittenOrDeleted() {
    assertEquals(Errno.SUCCESS, errno(".", true, PathMode.READ));
    assertEquals(Errno.ACCES, errno(".", false, PathMode.WRITE));
    assertEquals(Errno.ACCES, errno(".", false, PathMode.DELETE));
  }

  @Test
  void descriptorsCarryTheirDirectory() throws Exception {
    broker.opened(5, new WasiPathBroker.Opened("data/in", true, false, false));
    broker.opened(6, new WasiPathBroker.Opened("data/in/a.txt", false, false, false));
    assertEquals("data/in/a.txt", broker.resolve(5, "a.txt", true, PathMode.READ).rel());
    assertEquals(Errno.NOTDIR, broker.resolve(6, "x", true, PathMode.READ).errno());
    assertEquals(Errno.BADF, broker.resolve(9, "x", true, PathMode.READ).errno());
    // The subdirectory's path is part of every decision made through it.
    assertEquals(Errno.ACCES, broker.resolve(5, "a.txt", true, PathMode.DELETE).errno());
    assertEquals(Errno.NOTCAPABLE, broker.resolve(5, "../../private.txt", true).errno());
    broker.renumbered(5, 7);
    assertEquals(Errno.BADF, broker.resolve(5, "a.txt", true, PathMode.READ).errno());
    assertEquals(Errno.SUCCESS, broker.resolve(7, "a.txt", true, PathMode.READ).errno());
    var names =
        broker.listing(broker.opened(WasiPathBroker.ROOT_FD)).stream()
            .map(WasiPathBroker.Entry::name)
            .toList();
    assertEquals(java.util.List.of("data"), names);
    assertTrue(broker.listing(broker.opened(7)).stream().anyMatch(e -> e.name().equals("a.txt")));
  }

  @Test
  void aTrailingSlashNamesOnlyADirectory() {
    assertEquals(Errno.NOTDIR, errno("data/in/a.txt/", true, PathMode.READ));
    assertEquals(Errno.NOTDIR, errno("data/in/a.txt/.", true, PathMode.READ));
    assertEquals(Errno.SUCCESS, errno("data/in/", true, PathMode.READ));
    assertEquals(Errno.SUCCESS, errno("data/in/a.txt", true, PathMode.READ));
  }
}
