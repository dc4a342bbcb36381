package io.sandboxd.attest;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * Private key files: 64 lowercase hex characters of the Ed25519 seed and a newline, mode 0600. A
 * key that a group or other users can read is refused, because it may already have leaked.
 */
public final class KeyFile {
  private KeyFile() {}

  /**
   * Writes a new key file (refuses to overwrite), mode 0600, whole or not at all ({@link
   * PrivateFile}).
   */
  public static void write(Path file, SigningKey key) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null && !Files.isDirectory(parent)) {
      Files.createDirectories(
          parent,
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    }
    byte[] body = (Hex.encode(key.seed()) + "\n").getBytes(StandardCharsets.US_ASCII);
    try {
      PrivateFile.create(file, body);
    } catch (FileAlreadyExistsException e) {
      throw new AttestException(file + ": key file already exists; refusing to overwrite it", e);
    }
  }

  /**
   * Loads a key file, refusing a symbolic link, one this process's user does not own (another user
   * could know or swap the key), and one readable or writable by group or others.
   */
  public static SigningKey read(Path file) throws IOException {
    if (Files.isSymbolicLink(file) || !Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      throw new AttestException(file + ": private key is not a regular file; refusing it");
    }
    long owner =
        ((Number) Files.getAttribute(file, "unix:uid", LinkOption.NOFOLLOW_LINKS)).longValue();
    long me = new com.sun.security.auth.module.UnixSystem().getUid();
    if (owner != me) {
      throw new AttestException(
          file
              + ": private key is owned by uid "
              + owner
              + ", not by this process's uid "
              + me
              + "; refusing a key another user controls (chown it, or make a new one)");
    }
    Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS);
    for (PosixFilePermission p : perms) {
      switch (p) {
        case GROUP_READ, GROUP_WRITE, GROUP_EXECUTE, OTHERS_READ, OTHERS_WRITE, OTHERS_EXECUTE ->
            throw new AttestException(
                file
                    + ": private key mode is "
                    + PosixFilePermissions.toString(perms)
                    + "; it must be 0600 (chmod 600 "
                    + file
                    + ")");
        default -> {}
      }
    }
    String text = Files.readString(file, StandardCharsets.US_ASCII).strip();
    if (text.isEmpty()) {
      throw new AttestException(
          file
              + ": the key file is empty: its creation was cut short (a full disk, or a crash"
              + " before keys were written whole); if this node never served with it, remove it"
              + " and start again to make a new key");
    }
    return SigningKey.fromSeed(Hex.decode(text, 32, file.toString()));
  }

  /** Loads the key at {@code file}, or creates one there if it does not exist yet. */
  public static SigningKey loadOrCreate(Path file) throws IOException {
    if (Files.exists(file)) {
      return read(file);
    }
    SigningKey key = SigningKey.generate();
    write(file, key);
    return key;
  }
}
