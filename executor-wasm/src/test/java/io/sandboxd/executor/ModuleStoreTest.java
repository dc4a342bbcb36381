package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModuleStoreTest {
  @TempDir Path dir;

  private ModuleStore open(long maxBytes, long maxModules) {
    return ModuleStore.open(
        dir.resolve("modules"),
        new UnitCompiler(new FactoryCache(8), CompileLimits.defaults()),
        maxBytes,
        maxModules);
  }

  private static byte[] module(int value) {
    return WasmWriter.runModule(0, WasmWriter.returning(value));
  }

  /** The file the store keeps the module at {@code address} in. */
  private Path stored(String address) {
    return dir.resolve("modules").resolve(address);
  }

  /** {@code wasm} with one byte of its code changed: same size, another address. */
  private static byte[] damaged(byte[] wasm) {
    byte[] changed = wasm.clone();
    changed[changed.length - 2] ^= 1;
    return changed;
  }

  /** Dates {@code file} a minute back: old enough that the store trusts it once hashed. */
  private static void aMinuteOld(Path file) throws java.io.IOException {
    Files.setLastModifiedTime(
        file, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 60_000));
  }

  @Test
  void aPutModuleIsHeldByItsAddressPrivatelyAndSurvivesReopening() throws Exception {
    ModuleStore store = open(1 << 20, 10);
    byte[] wasm = module(7);
    ModuleStore.Put p = store.put(wasm);
    assertEquals(UnitCompiler.addressOf(wasm), p.address());
    assertEquals(wasm.length, p.bytes());
    assertFalse(p.alreadyHeld());
    assertTrue(store.put(wasm).alreadyHeld());
    assertTrue(store.compiler().factories().contains(p.address()), "validated by compiling");
    Path file = stored(p.address());
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
    assertEquals(
        "rwx------",
        PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("modules"))));
    ModuleStore reopened = open(1 << 20, 10);
    assertArrayEquals(wasm, reopened.get(p.address()));
    assertEquals(
        List.of(
            new ModuleStore.Held(
                p.address(), wasm.length, Files.getLastModifiedTime(file).toMillis())),
        reopened.list());
  }

  @Test
  void aModuleThatFailsValidationIsRefusedAndNothingIsStored() throws Exception {
    ModuleStore store = open(1 << 20, 10);
    byte[] bad = module(1);
    bad[bad.length - 3] = (byte) 0xff; // corrupt the code section
    assertThrows(UnitException.class, () -> store.put(bad));
    assertThrows(UnitException.class, () -> store.put(new byte[] {0, 'a', 's', 'n', 1, 0, 0, 0}));
    try (var files = Files.list(dir.resolve("modules"))) {
      assertEquals(0, files.count());
    }
    assertEquals(List.of(), store.list());
  }

  @Test
  void sizeAndCountAreBounded() {
    byte[] wasm = module(1);
    ModuleStore small = open(wasm.length - 1, 10);
    ModuleStoreException.Limit size =
        assertThrows(ModuleStoreException.Limit.class, () -> small.put(wasm));
    assertTrue(size.getMessage().contains(wasm.length + " bytes"), size.getMessage());
    ModuleStore two = open(1 << 20, 2);
    two.put(module(1));
    two.put(module(2));
    assertThrows(ModuleStoreException.Limit.class, () -> two.put(module(3)));
    assertTrue(two.put(module(2)).alreadyHeld(), "a held module is still answered when full");
    assertEquals(2, two.list().size());
  }

  @Test
  void aVerifiedUnchangedFileIsNotHashedAgainButAnyChangeIs() throws Exception {
    ModuleStore store = open(1 << 20, 10);
    byte[] wasm = module(4);
    String address = store.put(wasm).address();
    Path file = stored(address);
    // Just written: within a clock tick of a check, so hashed on every read.
    store.get(address);
    store.get(address);
    assertEquals(2, store.hashes());
    // Old enough to trust once hashed.
    aMinuteOld(file);
    assertArrayEquals(wasm, store.get(address));
    long reads = store.fileReads();
    byte[] first = store.get(address);
    assertArrayEquals(wasm, first);
    first[0] ^= 1; // a caller changing its copy changes no one else's
    assertArrayEquals(wasm, store.get(address));
    assertEquals(3, store.hashes());
    assertEquals(reads, store.fileReads(), "a kept, unchanged module is not read from its file");
    // Written in place (same size, same inode): its mtime moves on, and the read hashes again.
    byte[] changed = damaged(wasm);
    Files.write(file, changed);
    assertThrows(ModuleStoreException.Damaged.class, () -> store.get(address));
    assertEquals(reads + 1, store.fileReads());
    // Replaced by a rename, even with an old mtime: another inode, so hashed again.
    Path other = dir.resolve("other");
    Files.write(other, changed);
    aMinuteOld(other);
    Files.move(other, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    assertThrows(ModuleStoreException.Damaged.class, () -> store.get(address));
  }

  @Test
  void bytesChangedOnDiskAreRefusedOnReadAndRepairedByAPut() throws Exception {
    ModuleStore store = open(1 << 20, 10);
    byte[] wasm = module(3);
    String address = store.put(wasm).address();
    Path file = stored(address);
    byte[] changed = damaged(wasm);
    Files.write(file, changed);
    ModuleStoreException.Damaged d =
        assertThrows(ModuleStoreException.Damaged.class, () -> store.get(address));
    assertTrue(d.getMessage().contains(address), d.getMessage());
    assertFalse(store.put(wasm).alreadyHeld());
    assertArrayEquals(wasm, store.get(address));
  }

  @Test
  void addressesAreParsedStrictly() {
    String hex = "0123456789abcdef".repeat(4);
    assertEquals(hex, ModuleStore.parseAddress(hex));
    assertEquals(hex, ModuleStore.parseAddress("b3:" + hex));
    assertEquals(hex, ModuleStore.parseAddress("b3:" + hex.toUpperCase(java.util.Locale.ROOT)));
    Random r = new Random(20261130L);
    for (String bad :
        List.of(
            "",
            "b3:",
            hex.substring(1),
            hex + "0",
            "b3:" + hex.replace('a', 'g'),
            "sha256:" + hex)) {
      ModuleStoreException.BadAddress e =
          assertThrows(
              ModuleStoreException.BadAddress.class, () -> ModuleStore.parseAddress(bad), bad);
      assertTrue(e.getMessage().startsWith("module_address"), e.getMessage());
    }
    for (int i = 0; i < 200; i++) {
      char[] c = hex.toCharArray();
      c[r.nextInt(64)] = (char) (0x20 + r.nextInt(0x5f));
      String s = new String(c);
      boolean ok = s.toLowerCase(java.util.Locale.ROOT).matches("[0-9a-f]{64}");
      if (!ok) {
        assertThrows(
            ModuleStoreException.BadAddress.class,
            () -> ModuleStore.parseAddress(s),
            "seed 20261130 case " + i + ": " + s);
      }
    }
  }

  @Test
  void anUnknownAddressIsNotFoundNamingIt() {
    ModuleStore store = open(1 << 20, 10);
    String hex = "ab".repeat(32);
    ModuleStoreException.NotFound e =
        assertThrows(ModuleStoreException.NotFound.class, () -> store.get(hex));
    assertTrue(e.getMessage().contains("b3:" + hex), e.getMessage());
  }

  @Test
  void aPartialWriteLeftByACrashIsRemovedAtOpen() throws Exception {
    ModuleStore store = open(1 << 20, 10);
    store.put(module(1));
    Path partial = dir.resolve("modules").resolve(".incoming-" + "cd".repeat(32) + "-1");
    Files.write(partial, new byte[] {0, 'a'});
    ModuleStore reopened = open(1 << 20, 10);
    assertFalse(Files.exists(partial));
    assertEquals(1, reopened.list().size());
  }
}
