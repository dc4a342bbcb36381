package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.Blake3;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The content-addressed snapshot store: durable puts, dedupe, checked loads, storage trees. */
class SnapshotStoreTest {
  @TempDir Path tmp;

  static final CompiledUnit UNIT =
      InstanceSnapshotTest.COMPILER.compile(Wat2Wasm.parse(InstanceSnapshotTest.WAT));

  static InstanceSnapshot snapshot(long seed, int pokes) {
    Instance i = InstanceSnapshotTest.fresh(UNIT);
    InstanceSnapshotTest.call(i, "mutate");
    Random rnd = new Random(seed);
    for (int k = 0; k < pokes; k++) {
      InstanceSnapshotTest.call(i, "poke", rnd.nextInt(4 * 65536 - 8), rnd.nextLong());
    }
    return InstanceSnapshot.capture(i, UNIT.address(), null);
  }

  @Test
  void aStoredSnapshotLoadsBackAndRestoresTheSame() {
    SnapshotStore store = SnapshotStore.open(tmp.resolve("snapshots"));
    InstanceSnapshot snap = snapshot(1, 30);
    assertEquals(snap.address(), store.put(snap));
    // A second store on the same directory (a restarted daemon) reads it back.
    InstanceSnapshot back = SnapshotStore.open(tmp.resolve("snapshots")).load(snap.address());
    assertEquals(snap.address(), back.address());
    Instance a = InstanceSnapshotTest.fresh(UNIT);
    snap.restore(a, UNIT.address());
    Instance b = InstanceSnapshotTest.fresh(UNIT);
    back.restore(b, UNIT.address());
    int[] addrs = {0, 100, 131072, 70000, 200000};
    assertEquals(InstanceSnapshotTest.observe(a, addrs), InstanceSnapshotTest.observe(b, addrs));
  }

  @Test
  void identicalPagesAreStoredOnce() throws IOException {
    SnapshotStore store = SnapshotStore.open(tmp.resolve("snapshots"));
    InstanceSnapshot first = snapshot(2, 3);
    store.put(first);
    long written = store.bytesWritten();
    store.put(first);
    assertEquals(written, store.bytesWritten(), "a snapshot held already writes nothing");
    // Another run with one page different: that page, the page table and the manifest.
    Instance i = InstanceSnapshotTest.fresh(UNIT);
    first.restore(i, UNIT.address());
    InstanceSnapshotTest.call(i, "poke", 3 * 65536 + 16, 1234);
    InstanceSnapshot second = InstanceSnapshot.capture(i, UNIT.address(), null);
    long blobs = store.blobsWritten();
    store.put(second);
    assertEquals(3, store.blobsWritten() - blobs);
    long pageTable = 4 * 32;
    assertEquals(65536 + pageTable + second.manifest().length, store.bytesWritten() - written);
    assertEquals(store.held().size(), new java.util.HashSet<>(store.held()).size());
  }

  @Test
  void aDamagedOrMissingBlobIsNamed() throws IOException {
    SnapshotStore store = SnapshotStore.open(tmp.resolve("snapshots"));
    InstanceSnapshot snap = snapshot(3, 5);
    store.put(snap);
    String page = snap.pageAddress(2).orElseThrow();
    SnapshotStore.Location at = store.locate(page);
    byte[] pack = Files.readAllBytes(at.pack());
    pack[(int) at.offset() + at.length() / 2] ^= 1;
    Files.write(at.pack(), pack);
    SnapshotStore reopened = SnapshotStore.open(tmp.resolve("snapshots"));
    SnapshotException.DamagedBlob bad =
        assertThrows(SnapshotException.DamagedBlob.class, () -> reopened.load(snap.address()));
    assertEquals(page, bad.address());

    // A store given every blob but one page (putBlobs does not check completeness; load does).
    Map<String, byte[]> partial = new LinkedHashMap<>(snap.blobs());
    partial.remove(page);
    SnapshotStore other = SnapshotStore.open(tmp.resolve("other"));
    other.putBlobs(partial);
    SnapshotException.MissingBlob missing =
        assertThrows(SnapshotException.MissingBlob.class, () -> other.load(snap.address()));
    assertEquals(page, missing.address());
    assertTrue(missing.getMessage().contains(page));
    assertThrows(SnapshotException.MissingBlob.class, () -> other.load(Blake3.hex(new byte[] {1})));
    assertThrows(SnapshotException.Malformed.class, () -> other.load("B3:nothex"));
  }

  @Test
  void aTornPackLeftByACrashIsIgnoredAndPutsSurviveReopen() throws IOException {
    Path dir = tmp.resolve("snapshots");
    SnapshotStore store = SnapshotStore.open(dir);
    InstanceSnapshot a = snapshot(6, 4);
    store.put(a);
    // A temporary pack a crash left mid-write is removed at the next open.
    Files.write(dir.resolve("packs").resolve(".incoming-dead"), new byte[] {1, 2, 3});
    SnapshotStore reopened = SnapshotStore.open(dir);
    assertFalse(Files.exists(dir.resolve("packs").resolve(".incoming-dead")));
    assertEquals(a.address(), reopened.load(a.address()).address());
    assertEquals(store.held().size(), reopened.held().size());
  }

  @Test
  void importedBlobsAreAllCheckedBeforeAnyIsWritten() throws IOException {
    SnapshotStore source = SnapshotStore.open(tmp.resolve("a"));
    InstanceSnapshot snap = snapshot(4, 8);
    source.put(snap);
    Map<String, byte[]> bundle = source.blobs(snap.address());
    assertEquals(snap.blobs().keySet(), bundle.keySet());

    SnapshotStore target = SnapshotStore.open(tmp.resolve("b"));
    Map<String, byte[]> flipped = new LinkedHashMap<>(bundle);
    String victim = snap.pageAddress(2).orElseThrow();
    byte[] b = flipped.get(victim).clone();
    b[7] ^= (byte) 0x80;
    flipped.put(victim, b);
    SnapshotException.DamagedBlob e =
        assertThrows(SnapshotException.DamagedBlob.class, () -> target.putBlobs(flipped));
    assertEquals(victim, e.address());
    assertTrue(target.held().isEmpty(), "nothing half-imported");

    target.putBlobs(bundle);
    assertEquals(snap.address(), target.load(snap.address()).address());
  }

  @Test
  void aTreeRoundTripsAndSharesBlobs() throws IOException {
    Path root = tmp.resolve("storage");
    Files.createDirectories(root.resolve("a/b"));
    Files.createDirectories(root.resolve("empty"));
    Files.writeString(root.resolve("top.txt"), "hello");
    Files.writeString(root.resolve("a/b/same.txt"), "hello");
    byte[] big = new byte[300_000];
    new Random(5).nextBytes(big);
    Files.write(root.resolve("a/big.bin"), big);
    SnapshotStore store = SnapshotStore.open(tmp.resolve("snapshots"));
    String address = store.putTree(root);
    assertEquals(address, store.putTree(root), "the same tree, the same address");
    assertEquals(3, store.tree(address).size());
    assertEquals(3, store.blobs(address).size(), "hello once, big, the manifest");

    Path out = tmp.resolve("restored");
    store.restoreTree(address, out);
    assertEquals("hello", Files.readString(out.resolve("a/b/same.txt")));
    assertArrayEquals(big, Files.readAllBytes(out.resolve("a/big.bin")));
    assertTrue(Files.isDirectory(out.resolve("empty")));
    assertEquals(address, store.putTree(out));

    Files.writeString(root.resolve("top.txt"), "hellp");
    assertNotEquals(address, store.putTree(root));
    SnapshotException.Refused notEmpty =
        assertThrows(SnapshotException.Refused.class, () -> store.restoreTree(address, out));
    assertTrue(notEmpty.getMessage().contains("not empty"));
    Files.createDirectories(tmp.resolve("emptydir"));
    assertEquals(store.putTree(tmp.resolve("absent")), store.putTree(tmp.resolve("emptydir")));
  }

  @Test
  void symlinksSpecialFilesAndOversizeTreesAreRefused() throws Exception {
    Path root = tmp.resolve("storage");
    Files.createDirectories(root);
    Files.writeString(root.resolve("ok.txt"), "x");
    Files.createSymbolicLink(root.resolve("link"), Path.of("/etc/passwd"));
    SnapshotStore store = SnapshotStore.open(tmp.resolve("snapshots"));
    SnapshotException.Refused link =
        assertThrows(SnapshotException.Refused.class, () -> store.putTree(root));
    assertTrue(link.getMessage().contains("link is a symlink"), link.getMessage());
    Files.delete(root.resolve("link"));

    Process p = new ProcessBuilder("mkfifo", root.resolve("fifo").toString()).start();
    assertEquals(0, p.waitFor());
    SnapshotException.Refused fifo =
        assertThrows(SnapshotException.Refused.class, () -> store.putTree(root));
    assertTrue(fifo.getMessage().contains("fifo is not a regular file"), fifo.getMessage());
    Files.delete(root.resolve("fifo"));

    Files.write(root.resolve("big"), new byte[2000]);
    SnapshotStore small =
        SnapshotStore.open(tmp.resolve("small"), new SnapshotStore.TreeLimits(10, 1500, 1000, 4));
    SnapshotException.Refused size =
        assertThrows(SnapshotException.Refused.class, () -> small.putTree(root));
    assertTrue(size.getMessage().contains("big has 2000 bytes"), size.getMessage());
    Files.delete(root.resolve("big"));
    Files.createDirectories(root.resolve("1/2/3/4/5/6"));
    assertThrows(SnapshotException.Refused.class, () -> small.putTree(root));
  }

  @Test
  void aTreeManifestEscapingTheTargetIsRefused() {
    SnapshotStore store = SnapshotStore.open(tmp.resolve("snapshots"));
    byte[] content = "pwned".getBytes(StandardCharsets.UTF_8);
    String blob = Blake3.hex(content);
    for (String path : List.of("../escape", "/abs", "a//b", "a/./b")) {
      byte[] manifest =
          ("{\"dirs\":[],\"files\":[{\"blob\":\""
                  + blob
                  + "\",\"path\":\""
                  + path
                  + "\",\"size\":5}],\"schema\":\"sandbox.fs-tree/1\"}")
              .getBytes(StandardCharsets.UTF_8);
      Map<String, byte[]> blobs = new HashMap<>();
      blobs.put(blob, content);
      String address = Blake3.hex(manifest);
      blobs.put(address, manifest);
      store.putBlobs(blobs);
      Path target = tmp.resolve("t" + Math.abs(path.hashCode()));
      SnapshotException.Malformed e =
          assertThrows(SnapshotException.Malformed.class, () -> store.restoreTree(address, target));
      assertTrue(e.getMessage().contains(path), e.getMessage());
      assertFalse(Files.exists(tmp.resolve("escape")));
    }
  }

  /** Blobs of three puts: a, b in one pack; b (held already), c in the next; then d alone. */
  @Test
  void droppedBlobsGoAndTheOthersInTheirPacksStayReadableAfterReopen() throws IOException {
    Path dir = tmp.resolve("drop");
    SnapshotStore store = SnapshotStore.open(dir);
    Map<String, byte[]> blobs = new LinkedHashMap<>();
    for (String text : new String[] {"a", "b", "c", "d"}) {
      byte[] bytes = text.repeat(1000).getBytes(StandardCharsets.UTF_8);
      blobs.put(text, bytes);
    }
    String a = Blake3.hex(blobs.get("a"));
    String b = Blake3.hex(blobs.get("b"));
    String c = Blake3.hex(blobs.get("c"));
    String d = Blake3.hex(blobs.get("d"));
    store.putBlobs(Map.of(a, blobs.get("a"), b, blobs.get("b")));
    store.putBlobs(Map.of(b, blobs.get("b"), c, blobs.get("c")));
    store.putBlobs(Map.of(d, blobs.get("d")));
    assertEquals(3, packs(dir));

    // a goes from a pack b stays in (rewritten); d's pack goes whole; an unknown address is
    // ignored.
    long freed = store.drop(java.util.Set.of(a, d, "0".repeat(64)));
    assertEquals(2000, freed);
    assertFalse(store.has(a));
    assertFalse(store.has(d));
    assertArrayEquals(blobs.get("b"), store.read(b, "b"));
    assertArrayEquals(blobs.get("c"), store.read(c, "c"));
    assertEquals(2, packs(dir));

    SnapshotStore again = SnapshotStore.open(dir);
    assertEquals(java.util.Set.of(b, c), java.util.Set.copyOf(again.held()));
    assertArrayEquals(blobs.get("b"), again.read(b, "b"));
    again.drop(java.util.Set.of(b, c));
    assertEquals(0, packs(dir));
    assertTrue(SnapshotStore.open(dir).held().isEmpty());
  }

  /**
   * A reader of a kept blob never finds it missing while a drop rewrites its pack: the index moves
   * each kept blob to its new pack in one step (it was removed first, then re-added after the new
   * pack's fsync, and an export reading a parked run's blobs during a sweep failed in between).
   */
  @Test
  void keptBlobsStayReadableWhileADropRewritesTheirPack() throws Exception {
    SnapshotStore store = SnapshotStore.open(tmp.resolve("race"));
    java.util.Random random = new java.util.Random(20261201);
    for (int round = 0; round < 40; round++) {
      // One pack: kept blobs beside blobs to drop, so the drop rewrites the kept ones.
      Map<String, byte[]> pack = new LinkedHashMap<>();
      Map<String, byte[]> kept0 = new LinkedHashMap<>();
      java.util.Set<String> doomed = new java.util.HashSet<>();
      for (int i = 0; i < 16; i++) {
        byte[] bytes = new byte[4096 + random.nextInt(4096)];
        random.nextBytes(bytes);
        String a = Blake3.hex(bytes);
        pack.put(a, bytes);
        if (i % 2 == 0) {
          doomed.add(a);
        } else {
          kept0.put(a, bytes);
        }
      }
      java.util.List<String> kept = java.util.List.copyOf(kept0.keySet());
      store.putBlobs(pack);
      java.util.concurrent.atomic.AtomicReference<Throwable> failed =
          new java.util.concurrent.atomic.AtomicReference<>();
      java.util.concurrent.atomic.AtomicBoolean done =
          new java.util.concurrent.atomic.AtomicBoolean();
      Thread reader =
          new Thread(
              () -> {
                try {
                  while (!done.get()) {
                    for (String a : kept) {
                      assertArrayEquals(kept0.get(a), store.read(a, "kept"));
                    }
                  }
                } catch (Throwable t) {
                  failed.set(t);
                }
              });
      reader.start();
      store.drop(doomed);
      done.set(true);
      reader.join();
      if (failed.get() != null) {
        throw new AssertionError("round " + round + ": a kept blob went missing", failed.get());
      }
    }
  }

  private static long packs(Path dir) throws IOException {
    try (var s = Files.list(dir.resolve("packs"))) {
      return s.filter(p -> p.toString().endsWith(".pack")).count();
    }
  }
}
