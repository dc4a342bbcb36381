package io.sandboxd.attest;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Set;

/**
 * A new file of mode 0600 that appears whole or not at all: a key or an identity written on a full
 * disk, or cut by a crash, must not leave an empty or partial file behind that every later start
 * then refuses (or, worse, reads).
 */
public final class PrivateFile {
  private static final SecureRandom RANDOM = new SecureRandom();

  private PrivateFile() {}

  /**
   * Creates {@code file} holding {@code body}, durable once this returns; throws {@link
   * FileAlreadyExistsException} when it exists (it is never replaced). The bytes go to a temporary
   * sibling first, synced, then linked in under the name, which fails rather than replace; on any
   * failure nothing is left under either name.
   */
  public static void create(Path file, byte[] body) throws IOException {
    Path dir = file.toAbsolutePath().getParent();
    Set<PosixFilePermission> perms = PosixFilePermissions.fromString("rw-------");
    byte[] r = new byte[8];
    RANDOM.nextBytes(r);
    Path tmp = dir.resolve("." + file.getFileName() + ".incoming-" + HexFormat.of().formatHex(r));
    try {
      try (FileChannel ch =
          FileChannel.open(
              tmp,
              Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
              PosixFilePermissions.asFileAttribute(perms))) {
        // umask may have narrowed the mode further; set it exactly.
        Files.setPosixFilePermissions(tmp, perms);
        writeFully(ch, body);
        ch.force(true);
      }
      // link(2), unlike a rename, fails rather than replace a file of that name.
      Files.createLink(file, tmp);
    } catch (FileAlreadyExistsException e) {
      throw e;
    } catch (IOException e) {
      // The JDK names no file for a failed write ("No space left on device"): this does.
      throw new IOException(file + ": cannot create: " + e.getMessage(), e);
    } finally {
      Files.deleteIfExists(tmp);
    }
    syncDirectory(dir);
  }

  /** Writes all of {@code bytes} at the channel's position (one write may take only part). */
  public static void writeFully(FileChannel ch, byte[] bytes) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(bytes);
    while (b.hasRemaining()) {
      ch.write(b);
    }
  }

  /** Makes the entries of {@code d} durable: a link, rename or delete in it survives a crash. */
  public static void syncDirectory(Path d) throws IOException {
    try (FileChannel ch = FileChannel.open(d, StandardOpenOption.READ)) {
      ch.force(true);
    }
  }
}
