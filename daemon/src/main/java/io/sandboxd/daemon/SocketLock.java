package io.sandboxd.daemon;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * A single-instance guard: an exclusive lock on {@code <socket>.lock}. Netty unlinks whatever sits
 * at a socket path before binding, even a live daemon's socket, so we must not bind without it.
 */
public final class SocketLock implements AutoCloseable {
  private final FileChannel channel;
  private final FileLock lock;

  private SocketLock(FileChannel channel, FileLock lock) {
    this.channel = channel;
    this.lock = lock;
  }

  /** Takes the lock or throws, naming the socket a live daemon already serves. */
  public static SocketLock acquire(Path socket) throws IOException {
    Path lockFile = socket.resolveSibling(socket.getFileName() + ".lock");
    FileChannel ch;
    try {
      // O_NOFOLLOW: a link planted at the lock path must not make us create or open its target.
      ch =
          FileChannel.open(
              lockFile,
              Set.of(
                  StandardOpenOption.CREATE, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
              PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    } catch (FileSystemException e) {
      if (Files.isSymbolicLink(lockFile)) {
        throw new IOException(
            "lock file " + lockFile + ": is a symbolic link; refusing to follow it", e);
      }
      throw e;
    }
    try {
      PrivatePath.requireOwnFile(lockFile, "lock file", false);
    } catch (IOException e) {
      ch.close();
      throw e;
    }
    FileLock l;
    try {
      l = ch.tryLock();
    } catch (OverlappingFileLockException e) {
      l = null;
    }
    if (l == null) {
      ch.close();
      throw new IOException(
          "socket "
              + socket
              + " is served by a live daemon (lock "
              + lockFile
              + " is held); refusing to start");
    }
    return new SocketLock(ch, l);
  }

  @Override
  public void close() throws IOException {
    lock.release();
    channel.close();
  }
}
