package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Private key files: 0600, never overwritten, refused when group/world can reach them. */
class KeyFileTest {
  @TempDir Path dir;

  private static String mode(Path p) throws IOException {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
  }

  /** Writes {@code text} to a new file with the given symbolic mode. */
  private Path keyFileWith(String name, String text, String perms) throws IOException {
    Path p = dir.resolve(name);
    Files.writeString(p, text, StandardCharsets.US_ASCII);
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(perms));
    return p;
  }

  @Test
  void aWrittenKeyFileIsMode0600AndRoundTrips() throws IOException {
    SigningKey key = SigningKey.generate();
    Path p = dir.resolve("host.key");
    KeyFile.write(p, key);
    assertEquals("rw-------", mode(p));
    String body = Files.readString(p, StandardCharsets.US_ASCII);
    assertEquals(65, body.length());
    assertTrue(body.endsWith("\n"));
    assertEquals(Hex.encode(key.seed()) + "\n", body);
    SigningKey back = KeyFile.read(p);
    assertEquals(key.publicKey(), back.publicKey());
    byte[] msg = "attestation".getBytes(StandardCharsets.UTF_8);
    assertArrayEquals(key.sign(msg), back.sign(msg));
  }

  @Test
  void writeCreatesMissingParentDirectories() throws IOException {
    Path p = dir.resolve("a/b/c/host.key");
    SigningKey key = SigningKey.generate();
    KeyFile.write(p, key);
    assertEquals("rw-------", mode(p));
    assertEquals(key.publicKey(), KeyFile.read(p).publicKey());
  }

  @Test
  void writeRefusesToOverwriteAndLeavesTheOldKeyIntact() throws IOException {
    Path p = dir.resolve("host.key");
    SigningKey first = SigningKey.generate();
    KeyFile.write(p, first);
    String before = Files.readString(p);
    SigningKey second = SigningKey.generate();
    AttestException e = assertThrows(AttestException.class, () -> KeyFile.write(p, second));
    assertTrue(e.getMessage().contains(p.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("already exists"), e.getMessage());
    assertEquals(before, Files.readString(p));
    assertEquals(first.publicKey(), KeyFile.read(p).publicKey());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"rw-r--r--", "rw-r-----", "rw----r--", "rw--w----", "rw-----w-", "rwxrwxrwx"})
  void aKeyFileOthersCanReachIsRefusedNamingFileAndMode(String perms) throws IOException {
    SigningKey key = SigningKey.generate();
    Path p = keyFileWith("loose.key", Hex.encode(key.seed()) + "\n", perms);
    assertEquals(perms, mode(p));
    AttestException e = assertThrows(AttestException.class, () -> KeyFile.read(p));
    String m = e.getMessage();
    assertTrue(m.startsWith(p.toString() + ":"), m);
    assertTrue(m.contains("mode is " + perms), m);
    assertTrue(m.contains("0600"), m);
  }

  @Test
  void the0644And0640CasesExplicitly() throws IOException {
    SigningKey key = SigningKey.generate();
    Path p644 = keyFileWith("k644", Hex.encode(key.seed()), "rw-r--r--");
    Path p640 = keyFileWith("k640", Hex.encode(key.seed()), "rw-r-----");
    String m644 = assertThrows(AttestException.class, () -> KeyFile.read(p644)).getMessage();
    String m640 = assertThrows(AttestException.class, () -> KeyFile.read(p640)).getMessage();
    assertTrue(m644.contains(p644.toString()) && m644.contains("rw-r--r--"), m644);
    assertTrue(m640.contains(p640.toString()) && m640.contains("rw-r-----"), m640);
    // Tightening the mode makes the same file acceptable.
    Files.setPosixFilePermissions(p644, PosixFilePermissions.fromString("rw-------"));
    assertEquals(key.publicKey(), KeyFile.read(p644).publicKey());
  }

  @Test
  void anOwnerReadOnlyKeyIsAccepted() throws IOException {
    SigningKey key = SigningKey.generate();
    Path p = keyFileWith("ro.key", Hex.encode(key.seed()) + "\n", "r--------");
    assertEquals(key.publicKey(), KeyFile.read(p).publicKey());
  }

  @Test
  void aKeyWithoutTrailingNewlineIsAccepted() throws IOException {
    SigningKey key = SigningKey.generate();
    Path p = keyFileWith("nonl.key", Hex.encode(key.seed()), "rw-------");
    assertEquals(key.publicKey(), KeyFile.read(p).publicKey());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "\n",
        "zz",
        "not hex at all",
        // 62 characters: one byte short
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddee",
        // 66 characters: one byte long
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00",
        // uppercase: one spelling per value
        "00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff",
        // a non-hex character in the middle
        "00112233445566778899aabbccddeeff0011223344556677889gaabbccddeeff",
        "0x112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
      })
  void malformedKeyHexIsRefusedNamingTheFile(String text) throws IOException {
    Path p = keyFileWith("bad.key", text, "rw-------");
    AttestException e = assertThrows(AttestException.class, () -> KeyFile.read(p));
    assertTrue(e.getMessage().startsWith(p.toString() + ":"), e.getMessage());
  }

  @Test
  void anEmptyKeyFileSaysItsCreationWasCutShortAndHowToRecover() throws IOException {
    // What a first start on a full disk left before keys were written whole.
    Path p = keyFileWith("empty.key", "", "rw-------");
    String m = assertThrows(AttestException.class, () -> KeyFile.loadOrCreate(p)).getMessage();
    assertTrue(m.startsWith(p + ": the key file is empty"), m);
    assertTrue(m.contains("remove it"), m);
    assertEquals("", Files.readString(p), "left for the operator to decide");
  }

  @Test
  void loadOrCreateCreatesOnceThenLoadsTheSameKey() throws IOException {
    Path p = dir.resolve("state/host.key");
    SigningKey created = KeyFile.loadOrCreate(p);
    assertTrue(Files.exists(p));
    assertEquals("rw-------", mode(p));
    SigningKey loaded = KeyFile.loadOrCreate(p);
    assertEquals(created.publicKey(), loaded.publicKey());
    Path other = dir.resolve("state/other.key");
    assertNotEquals(created.publicKey(), KeyFile.loadOrCreate(other).publicKey());
  }

  @Test
  void loadOrCreateRefusesAnExistingLooseKeyInsteadOfReplacingIt() throws IOException {
    SigningKey key = SigningKey.generate();
    Path p = keyFileWith("loose.key", Hex.encode(key.seed()) + "\n", "rw-r--r--");
    assertThrows(AttestException.class, () -> KeyFile.loadOrCreate(p));
    assertEquals(Hex.encode(key.seed()) + "\n", Files.readString(p));
  }

  @Test
  void aKeyFileAnotherUserOwnsOrALinkIsRefused() throws IOException {
    Path key = dir.resolve("node.ed25519");
    KeyFile.write(key, SigningKey.generate());
    Path link = Files.createSymbolicLink(dir.resolve("link.ed25519"), key);
    AttestException viaLink = assertThrows(AttestException.class, () -> KeyFile.read(link));
    assertTrue(viaLink.getMessage().contains("not a regular file"), viaLink.getMessage());

    long me = new com.sun.security.auth.module.UnixSystem().getUid();
    Assumptions.assumeTrue(me == 0, "only root can give a file to another user");
    Files.setOwner(
        key, dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody"));
    AttestException foreign = assertThrows(AttestException.class, () -> KeyFile.read(key));
    assertTrue(foreign.getMessage().contains("owned by uid 65534"), foreign.getMessage());
  }
}
