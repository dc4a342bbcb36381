package io.sandboxd.enforcer;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;
import java.util.Optional;

/**
 * Opens a path to read only if it names a regular file at the moment it is opened. A check before
 * the JDK's open leaves a window in which a unit's program can put a FIFO there, whose open blocks
 * the reader until a writer comes (never, and no interrupt ends it); here the open itself does not
 * block, and what it opened is checked through its descriptor.
 */
public final class RegularFile {
  private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

  private RegularFile() {}

  /** The libc calls this needs. */
  interface Libc extends Library {
    // The same bits on every Linux architecture (asm-generic, x86, arm64).
    int O_RDONLY = 0;
    int O_NONBLOCK = 04000;
    int O_CLOEXEC = 02000000;

    int open(String path, int flags) throws LastErrorException;

    int close(int fd) throws LastErrorException;
  }

  private static final class Bound {
    // Loaded on first use; empty where there is no libc to load (not Linux).
    static final Optional<Libc> C = LibcCalls.bind(Libc.class);
  }

  /**
   * A stream of {@code file}'s bytes; refused, without waiting, when the path is a link, a FIFO, a
   * device or a directory, or names another file by the time it is opened.
   */
  public static InputStream open(Path file) throws IOException {
    Optional<Libc> c = Bound.C;
    if (c.isEmpty()) {
      // Only the JDK's check and open, with the window between them.
      refuseUnlessRegular(file, Files.readAttributes(file, BasicFileAttributes.class, NOFOLLOW));
      return Files.newInputStream(file, LinkOption.NOFOLLOW_LINKS);
    }
    int fd;
    try {
      fd = c.get().open(file.toString(), Libc.O_RDONLY | Libc.O_NONBLOCK | Libc.O_CLOEXEC);
    } catch (LastErrorException e) {
      throw new IOException(file + ": cannot open (errno " + e.getErrorCode() + ")", e);
    }
    try {
      // The descriptor pins what was opened: its attributes, and a second open through it, are of
      // that inode whatever the path names now.
      Path opened = Path.of("/proc/self/fd/" + fd);
      BasicFileAttributes held = Files.readAttributes(opened, BasicFileAttributes.class);
      refuseUnlessRegular(file, held);
      // The open followed a link if the path was one: the path itself must name the same file.
      BasicFileAttributes named = Files.readAttributes(file, BasicFileAttributes.class, NOFOLLOW);
      if (!named.isRegularFile() || !Objects.equals(held.fileKey(), named.fileKey())) {
        throw new IOException(file + ": not a regular file");
      }
      return Files.newInputStream(opened);
    } finally {
      try {
        c.get().close(fd);
      } catch (LastErrorException e) {
        // the stream (if any) holds a descriptor of its own
      }
    }
  }

  private static void refuseUnlessRegular(Path file, BasicFileAttributes a) throws IOException {
    if (!a.isRegularFile()) {
      throw new IOException(file + ": not a regular file");
    }
  }
}
