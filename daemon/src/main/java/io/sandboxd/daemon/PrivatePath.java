package io.sandboxd.daemon;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * Checks that a path the daemon trusts (its state and key directories, its socket and lock file)
 * cannot be changed by another user, as sshd checks its key files: the directory and every ancestor
 * must be owned by the daemon's user or root and not writable by group or others (an ancestor may
 * be a root-owned sticky directory such as /tmp, whose entries others cannot replace).
 */
final class PrivatePath {
  private static final int GROUP_OR_OTHER_WRITE = 0022;
  private static final int STICKY = 01000;

  private PrivatePath() {}

  /** The uid this process runs as. */
  static long currentUid() {
    return new com.sun.security.auth.module.UnixSystem().getUid();
  }

  /**
   * Refuses {@code dir} (a {@code role} such as "state directory") if another user can write it.
   */
  static void requireDirectory(Path dir, String role) throws IOException {
    requireDirectory(dir, role, false);
  }

  /**
   * Refuses a socket directory another user can write, except a root-owned sticky one (such as
   * /tmp), where others cannot replace the socket or lock file the daemon creates; those two are
   * checked themselves ({@link #requireOwnFile}).
   */
  static void requireSocketDirectory(Path dir) throws IOException {
    requireDirectory(dir, "socket directory", true);
  }

  private static void requireDirectory(Path dir, String role, boolean sharedSticky)
      throws IOException {
    Path real = dir.toRealPath();
    long me = currentUid();
    if (!Files.isDirectory(real, LinkOption.NOFOLLOW_LINKS)) {
      throw new IOException(role + " " + dir + ": not a directory");
    }
    int mode = mode(real);
    long owner = uid(real);
    requireTrustedOwner(role + " " + dir + ":", owner, me);
    if ((mode & GROUP_OR_OTHER_WRITE) != 0
        && !(sharedSticky && (mode & STICKY) != 0 && owner == 0)) {
      throw new IOException(
          role
              + " "
              + dir
              + ": mode "
              + octal(mode)
              + " lets other users write it; it must not"
              + " be group- or world-writable (chmod go-w "
              + dir
              + ")");
    }
    for (Path p = real.getParent(); p != null; p = p.getParent()) {
      int m = mode(p);
      long o = uid(p);
      requireTrustedOwner(role + " " + dir + ": its ancestor " + p + " is", o, me);
      if ((m & GROUP_OR_OTHER_WRITE) != 0 && !((m & STICKY) != 0 && o == 0)) {
        throw new IOException(
            role
                + " "
                + dir
                + ": its ancestor "
                + p
                + " (mode "
                + octal(m)
                + ") lets other users"
                + " replace it; it must not be group- or world-writable");
      }
    }
  }

  /**
   * Refuses what {@code subject} names unless {@code owner} is the daemon's uid {@code me} or root.
   */
  private static void requireTrustedOwner(String subject, long owner, long me) throws IOException {
    if (owner != me && owner != 0) {
      throw new IOException(
          subject
              + " owned by uid "
              + owner
              + ", not by the daemon's uid "
              + me
              + " or root; refusing to trust it");
    }
  }

  /**
   * Refuses {@code file} unless it is, without following links, a file of {@code kind} owned by
   * this process's uid with one link: what the daemon itself created there.
   */
  static void requireOwnFile(Path file, String role, boolean socket) throws IOException {
    if (Files.isSymbolicLink(file)) {
      throw new IOException(role + " " + file + ": is a symbolic link; refusing to follow it");
    }
    var attrs =
        Files.readAttributes(
            file, java.nio.file.attribute.PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    if (socket ? !attrs.isOther() : !attrs.isRegularFile()) {
      throw new IOException(
          role + " " + file + ": not a " + (socket ? "socket" : "regular file") + "; refusing it");
    }
    long owner = uid(file);
    if (owner != currentUid()) {
      throw new IOException(
          role
              + " "
              + file
              + ": owned by uid "
              + owner
              + ", not by the daemon's uid "
              + currentUid()
              + "; refusing it");
    }
    int links = (Integer) Files.getAttribute(file, "unix:nlink", LinkOption.NOFOLLOW_LINKS);
    if (links != 1) {
      throw new IOException(role + " " + file + ": has " + links + " hard links; refusing it");
    }
  }

  private static int mode(Path p) throws IOException {
    return (Integer) Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS);
  }

  private static long uid(Path p) throws IOException {
    return ((Number) Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS)).longValue();
  }

  private static String octal(int mode) {
    return String.format("%04o", mode & 07777);
  }
}
