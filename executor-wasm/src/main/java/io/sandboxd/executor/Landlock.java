package io.sandboxd.executor;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import io.sandboxd.enforcer.LibcCalls;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The Landlock ruleset an exec'd tree runs under: its programs run as the daemon's user, and
 * without it they could read the node's key and store, other modules' storage and the daemon's
 * socket directory, write anywhere the daemon may, connect anywhere over TCP and signal the daemon.
 * With it they read and execute only beneath the system's directories and their own image, read and
 * write only beneath their working directory (and a few device files), make no TCP connection (ABI
 * 4) and signal no process outside the tree (ABI 6). Applied to one fresh thread, which then starts
 * the tree: the thread's children inherit it, the rest of the daemon never has it.
 */
final class Landlock {
  private static final Logger LOG = Logger.getLogger(Landlock.class.getName());

  // Syscall numbers: the same on every architecture (the unified table, from Linux 5.13).
  private static final long CREATE_RULESET = 444;
  private static final long ADD_RULE = 445;
  private static final long RESTRICT_SELF = 446;
  private static final int CREATE_RULESET_VERSION = 1;
  private static final int RULE_PATH_BENEATH = 1;
  private static final int PR_SET_NO_NEW_PRIVS = 38;
  private static final int O_PATH = 010000000;
  private static final int O_CLOEXEC = 02000000;

  // Filesystem rights, by the ABI version that knows them.
  private static final long EXECUTE = 1L;
  private static final long WRITE_FILE = 1L << 1;
  private static final long READ_FILE = 1L << 2;
  private static final long READ_DIR = 1L << 3;
  private static final long ALL_V1 = (1L << 13) - 1; // through MAKE_SYM
  private static final long MAKE_DEVICE = (1L << 6) | (1L << 11); // MAKE_CHAR, MAKE_BLOCK
  private static final long REFER = 1L << 13; // ABI 2
  private static final long TRUNCATE = 1L << 14; // ABI 3
  private static final long IOCTL_DEV = 1L << 15; // ABI 5
  private static final long NET_ALL = 0b11; // BIND_TCP, CONNECT_TCP: ABI 4
  private static final long SCOPE_ALL = 0b11; // abstract unix sockets, signals: ABI 6

  /**
   * System directories a tree may read and execute beneath, where they exist; and the JDK's, whose
   * spawn helper starts the tree from inside the ruleset.
   */
  static final List<Path> SYSTEM =
      java.util.stream.Stream.of(
              "/usr",
              "/bin",
              "/sbin",
              "/lib",
              "/lib32",
              "/lib64",
              "/libx32",
              "/etc",
              "/opt",
              "/proc",
              "/sys",
              System.getProperty("java.home"))
          .map(Path::of)
          .toList();

  /** Device files a tree may read and write (never a terminal, a disk or /dev/shm). */
  static final List<Path> DEVICES =
      List.of("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom").stream()
          .map(Path::of)
          .toList();

  /**
   * What one tree may reach: read and execute beneath {@code readable} but never at or beneath
   * {@code hidden} (the node's own files: its state, its secrets), read and write beneath {@code
   * writable}, write the files {@code writableFiles}.
   */
  record Rules(
      List<Path> readable, List<Path> hidden, List<Path> writable, List<Path> writableFiles) {
    Rules {
      readable = List.copyOf(readable);
      // Compared as given and as the file they name, so that no link leads around one.
      List<Path> both = new java.util.ArrayList<>();
      for (Path h : hidden) {
        both.add(h.toAbsolutePath().normalize());
        try {
          both.add(h.toRealPath());
        } catch (IOException e) {
          // not there (yet): hidden as named
        }
      }
      hidden = List.copyOf(both);
      writable = List.copyOf(writable);
      writableFiles = List.copyOf(writableFiles);
    }

    /**
     * The directories and files to grant so that everything beneath {@code readable} is reached but
     * {@code hidden}: Landlock only allows, so a root holding a hidden path is granted by its
     * entries instead, down the hidden path's ancestors, leaving the hidden one out.
     */
    List<Path> readableLessHidden() throws IOException {
      List<Path> out = new java.util.ArrayList<>();
      for (Path root : readable) {
        grantLessHidden(root.toAbsolutePath().normalize(), out, 0);
      }
      return out;
    }

    private void grantLessHidden(Path dir, List<Path> out, int depth) throws IOException {
      Path real;
      try {
        real = dir.toRealPath();
      } catch (IOException e) {
        return; // gone, or a dangling link: nothing to grant
      }
      boolean holdsHidden = false;
      for (Path h : hidden) {
        if (h.equals(dir) || h.equals(real)) {
          return; // hidden itself
        }
        holdsHidden |= h.startsWith(dir) || h.startsWith(real);
      }
      if (!holdsHidden) {
        out.add(dir);
        return;
      }
      if (depth > 32 || !Files.isDirectory(real)) {
        return; // too deep to carve around: granted nothing rather than the hidden path
      }
      try (var entries = Files.newDirectoryStream(dir)) {
        for (Path entry : entries) {
          grantLessHidden(entry, out, depth + 1);
        }
      }
    }
  }

  /** The libc calls this needs. */
  interface Libc extends Library {
    long syscall(long number, Object... args) throws LastErrorException;

    int prctl(int option, long arg2, long arg3, long arg4, long arg5) throws LastErrorException;

    int open(String path, int flags) throws LastErrorException;

    int close(int fd) throws LastErrorException;
  }

  private static final class Bound {
    static final Optional<Libc> C = LibcCalls.bind(Libc.class);
    // The kernel's Landlock ABI version; 0 where it has none (or it is disabled at boot).
    static final int ABI = abi();

    private static int abi() {
      if (C.isEmpty()) {
        return 0;
      }
      try {
        int v = (int) C.get().syscall(CREATE_RULESET, Pointer.NULL, 0L, CREATE_RULESET_VERSION);
        return Math.max(0, v);
      } catch (LastErrorException e) {
        LOG.warning(
            "exec: no Landlock on this kernel (errno "
                + e.getErrorCode()
                + "): exec'd programs reach whatever the daemon's user may");
        return 0;
      }
    }
  }

  private Landlock() {}

  /** The kernel's Landlock ABI version, 0 when there is none. */
  static int abi() {
    return Bound.ABI;
  }

  /**
   * Restricts the calling thread, and every process it starts from now on, to {@code rules}; a
   * thread cannot be given back what this takes, so the caller is a thread made for one tree.
   * Nothing happens where the kernel has no Landlock.
   */
  static void restrictThisThread(Rules rules) throws IOException {
    int abi = abi();
    if (abi < 1) {
      return;
    }
    Libc c = Bound.C.orElseThrow();
    long fs = ALL_V1 | (abi >= 2 ? REFER : 0) | (abi >= 3 ? TRUNCATE : 0);
    fs |= abi >= 5 ? IOCTL_DEV : 0;
    long readExec = READ_FILE | READ_DIR | EXECUTE;
    long fileRights = READ_FILE | WRITE_FILE | (abi >= 3 ? TRUNCATE : 0);
    int size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
    Memory attr = new Memory(24);
    attr.clear();
    attr.setLong(0, fs);
    attr.setLong(8, abi >= 4 ? NET_ALL : 0);
    attr.setLong(16, abi >= 6 ? SCOPE_ALL : 0);
    int ruleset;
    try {
      ruleset = (int) c.syscall(CREATE_RULESET, attr, (long) size, 0);
    } catch (LastErrorException e) {
      throw new IOException("landlock_create_ruleset: errno " + e.getErrorCode(), e);
    }
    try {
      for (Path p : rules.readableLessHidden()) {
        beneath(c, ruleset, p, readExec);
      }
      for (Path p : DEVICES) {
        beneath(c, ruleset, p, fileRights | (abi >= 5 ? IOCTL_DEV : 0));
      }
      for (Path p : rules.writable()) {
        // Everything beneath but device nodes, which would open the node's disks and memory to a
        // tree that could make them (one started with the capability, as a root daemon's were).
        beneath(c, ruleset, p, fs & ~MAKE_DEVICE);
      }
      for (Path p : rules.writableFiles()) {
        beneath(c, ruleset, p, fileRights);
      }
      c.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
      c.syscall(RESTRICT_SELF, ruleset, 0);
    } catch (LastErrorException e) {
      throw new IOException("landlock: errno " + e.getErrorCode(), e);
    } finally {
      c.close(ruleset);
    }
  }

  /** Grants {@code rights} beneath {@code path}; a path that does not exist grants nothing. */
  private static void beneath(Libc c, int ruleset, Path path, long rights) throws IOException {
    int fd;
    try {
      fd = c.open(path.toString(), O_PATH | O_CLOEXEC);
    } catch (LastErrorException e) {
      return; // not there, or not reachable by the daemon either
    }
    try {
      // Only a file's own rights may be granted on a file; a directory takes them all.
      long granted =
          Files.isDirectory(path)
              ? rights
              : rights & (EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV);
      Memory beneath = new Memory(12); // struct landlock_path_beneath_attr, packed
      beneath.setLong(0, granted);
      beneath.setInt(8, fd);
      c.syscall(ADD_RULE, ruleset, RULE_PATH_BENEATH, beneath, 0);
    } catch (LastErrorException e) {
      throw new IOException("landlock_add_rule " + path + ": errno " + e.getErrorCode(), e);
    } finally {
      c.close(fd);
    }
  }
}
