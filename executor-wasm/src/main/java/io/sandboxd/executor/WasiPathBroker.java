package io.sandboxd.executor;

import io.sandboxd.enforcer.Enforcer;
import io.sandboxd.enforcer.PathMode;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Decides every path a WASI guest names against the storage grant and keeps it inside the unit's
 * storage root. The guest path is joined to the path of its directory descriptor; `..` and absolute
 * paths are refused; symlinks are resolved on the host and must stay beneath the root; the Enforcer
 * is asked about the path as named and, when a link leads elsewhere, as resolved. Chicory then acts
 * on the resolved root-relative path with symlink following switched off, so it never follows a
 * link we did not check.
 */
final class WasiPathBroker {
  /** The preopened storage root: Chicory allocates stdin, stdout and stderr before it. */
  static final int ROOT_FD = 3;

  /**
   * What a guest descriptor refers to: a root-relative real path, directory or file, and whether it
   * was opened for writing (and in append mode).
   */
  record Opened(String rel, boolean directory, boolean writable, boolean append) {}

  /**
   * A brokered path: an errno, or the root-relative real path ({@code ""} is the root); {@code
   * dirOnly} when the guest named it with a trailing {@code /} (or {@code /.}), so only a directory
   * may answer to it.
   */
  record Brokered(int errno, String rel, Path host, boolean dirOnly, Preopen at) {
    static Brokered refused(int errno) {
      return new Brokered(errno, null, null, false, null);
    }

    boolean ok() {
      return errno == Errno.SUCCESS;
    }

    /** The path as Chicory resolves it against the descriptor of the preopen it lies in. */
    String forChicory() {
      String inner = at.inner(rel);
      return inner.isEmpty() ? "." : inner;
    }

    /** The preopened descriptor Chicory acts through. */
    int fd() {
      return at.fd();
    }

    /** The quota ledger of the directory the path lies in. */
    StorageLedger ledger() {
      return at.ledger();
    }
  }

  /**
   * A directory preopened for the guest: the storage root at {@code ""} ({@link #ROOT_FD}), or an
   * environment's mount at its target ({@code "data"} for {@code /data}), each a real host path
   * with its own quota ledger. Guest paths form one namespace: a path lies in the preopen with the
   * longest target that is a prefix of it, so a mount shadows what the storage root holds there.
   */
  record Preopen(String rel, Path root, StorageLedger ledger, int fd) {
    boolean holds(String path) {
      return rel.isEmpty()
          || path.equals(rel)
          || (path.startsWith(rel) && path.charAt(rel.length()) == '/');
    }

    /** {@code path} relative to this preopen's directory. */
    String inner(String path) {
      return rel.isEmpty()
          ? path
          : path.length() == rel.length() ? "" : path.substring(rel.length() + 1);
    }

    /** The namespace path of {@code inner}, a path relative to this preopen's directory. */
    String outer(String inner) {
      return inner.isEmpty() ? rel : rel.isEmpty() ? inner : rel + "/" + inner;
    }
  }

  /** An environment mount to preopen: its target (without the leading "/"), its real directory. */
  record Mount(String rel, Path realRoot, StorageLedger ledger) {}

  /** One directory entry the guest may see. */
  record Entry(String name, byte type, long ino) {}

  // WASI filetype values for directory entries.
  private static final byte TYPE_UNKNOWN = 0;
  private static final byte TYPE_DIRECTORY = 3;
  private static final byte TYPE_REGULAR = 4;
  private static final byte TYPE_SYMLINK = 7;

  private final Enforcer enforcer;
  private final Path root;
  // The storage root first, then the mounts in the order Chicory numbers their descriptors.
  private final List<Preopen> preopens = new ArrayList<>();
  private final Map<Integer, Opened> open = new HashMap<>();

  /** A broker for {@code realRoot}, which must already be a real (symlink-free) path. */
  WasiPathBroker(Enforcer enforcer, Path realRoot, StorageLedger ledger) {
    this(enforcer, realRoot, ledger, List.of());
  }

  /**
   * A broker for {@code realRoot} and the environment's {@code mounts} (real paths too), which
   * Chicory preopens after the root, in this order, as descriptors 4, 5, ...
   */
  WasiPathBroker(Enforcer enforcer, Path realRoot, StorageLedger ledger, List<Mount> mounts) {
    this.enforcer = enforcer;
    this.root = realRoot;
    preopens.add(new Preopen("", realRoot, ledger, ROOT_FD));
    open.put(ROOT_FD, new Opened("", true, false, false));
    for (Mount m : mounts) {
      int fd = ROOT_FD + preopens.size();
      preopens.add(new Preopen(m.rel(), m.realRoot(), m.ledger(), fd));
      open.put(fd, new Opened(m.rel(), true, false, false));
    }
  }

  Path root() {
    return root;
  }

  /** The mounts, in descriptor order (the storage root not included). */
  List<Preopen> mounts() {
    return preopens.subList(1, preopens.size());
  }

  /** The highest descriptor preopened: those up to it stay open whatever the guest does. */
  int lastPreopenFd() {
    return ROOT_FD + preopens.size() - 1;
  }

  /** The preopen a namespace path lies in: the one with the longest target above it. */
  Preopen preopenOf(String rel) {
    Preopen best = preopens.get(0);
    for (Preopen p : preopens) {
      if (p.holds(rel) && p.rel().length() > best.rel().length()) {
        best = p;
      }
    }
    return best;
  }

  /** The host path of a namespace path (already brokered). */
  Path host(String rel) {
    Preopen at = preopenOf(rel);
    String inner = at.inner(rel);
    return inner.isEmpty() ? at.root() : at.root().resolve(inner);
  }

  /** The quota ledger of the directory a namespace path lies in. */
  StorageLedger ledgerOf(String rel) {
    return preopenOf(rel).ledger();
  }

  private boolean isPreopen(String rel) {
    for (Preopen p : preopens) {
      if (p.rel().equals(rel)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Brokers {@code raw}, named relative to directory descriptor {@code dirFd}, for {@code modes}:
   * lexical refusals first, then the grant (before the host filesystem is touched), then
   * containment of the real path, then the grant again for the real path if it differs.
   */
  synchronized Brokered resolve(int dirFd, String raw, boolean followFinal, PathMode... modes) {
    Brokered named = lexical(dirFd, raw);
    if (!named.ok()) {
      return named;
    }
    int denied = decide(named.rel(), modes);
    if (denied != Errno.SUCCESS) {
      return Brokered.refused(denied);
    }
    Brokered real = contain(named.rel(), followFinal);
    if (!real.ok()) {
      return real;
    }
    if (named.dirOnly()) {
      // "file/" names a directory: a file answering to it is NOTDIR, as on POSIX.
      if (Files.exists(real.host(), LinkOption.NOFOLLOW_LINKS)
          && !Files.isDirectory(real.host(), LinkOption.NOFOLLOW_LINKS)) {
        return Brokered.refused(Errno.NOTDIR);
      }
      real = new Brokered(Errno.SUCCESS, real.rel(), real.host(), true, real.at());
    }
    if (real.rel().equals(named.rel())) {
      return real;
    }
    denied = decide(real.rel(), modes);
    return denied != Errno.SUCCESS ? Brokered.refused(denied) : real;
  }

  /**
   * The root-relative path {@code raw} names under {@code dirFd}, without touching the host: an
   * absolute path or a `..` segment is NOTCAPABLE whatever the globs say.
   */
  synchronized Brokered lexical(int dirFd, String raw) {
    Opened dir = open.get(dirFd);
    if (dir == null) {
      return Brokered.refused(Errno.BADF);
    }
    if (!dir.directory()) {
      return Brokered.refused(Errno.NOTDIR);
    }
    if (raw.indexOf('\0') >= 0) {
      return Brokered.refused(Errno.INVAL);
    }
    if (raw.isEmpty()) {
      return Brokered.refused(Errno.NOENT);
    }
    if (raw.charAt(0) == '/') {
      return Brokered.refused(Errno.NOTCAPABLE);
    }
    List<String> segments = new ArrayList<>();
    if (!dir.rel().isEmpty()) {
      segments.addAll(List.of(dir.rel().split("/")));
    }
    boolean dirOnly = raw.endsWith("/") || raw.endsWith("/.") || raw.equals(".");
    for (String seg : raw.split("/", -1)) {
      if (seg.isEmpty() || seg.equals(".")) {
        continue;
      }
      if (seg.equals("..")) {
        // Even a `..` that would stay inside is refused: the storage grant names paths, not walks.
        return Brokered.refused(Errno.NOTCAPABLE);
      }
      segments.add(seg);
    }
    String rel = String.join("/", segments);
    return new Brokered(Errno.SUCCESS, rel, host(rel), dirOnly, preopenOf(rel));
  }

  /**
   * ACCES unless every mode is granted for {@code rel}; the root and each mount point itself may
   * only be read, like the root (the guest holds their descriptors already; removing or renaming
   * one would pull it from under its descriptor). What lies beneath is decided by the globs.
   */
  int decide(String rel, PathMode... modes) {
    for (PathMode m : modes) {
      if (isPreopen(rel) ? m != PathMode.READ : !enforcer.mayPath(m, rel).allowed()) {
        return Errno.ACCES;
      }
    }
    return Errno.SUCCESS;
  }

  /** True when some mode of the grant covers {@code rel}: what a directory listing may show. */
  boolean visible(String rel) {
    for (PathMode m : PathMode.values()) {
      if (enforcer.mayPath(m, rel).allowed()) {
        return true;
      }
    }
    return false;
  }

  /**
   * The real path of {@code rel} beneath the root: every directory on the way is resolved on the
   * host and must stay beneath it; the last segment is resolved too when {@code followFinal}.
   */
  private Brokered contain(String rel, boolean followFinal) {
    Preopen at = preopenOf(rel);
    Path root = at.root();
    String inner = at.inner(rel);
    if (inner.isEmpty()) {
      return new Brokered(Errno.SUCCESS, rel, root, false, at);
    }
    Path named = root.resolve(inner);
    Path parent;
    try {
      parent = named.getParent().toRealPath();
    } catch (NoSuchFileException e) {
      return Brokered.refused(Errno.NOENT);
    } catch (IOException e) {
      return Brokered.refused(ioErrno(e));
    }
    if (!parent.startsWith(root)) {
      return Brokered.refused(Errno.NOTCAPABLE);
    }
    if (!Files.isDirectory(parent)) {
      return Brokered.refused(Errno.NOTDIR);
    }
    Path target = parent.resolve(named.getFileName().toString());
    if (followFinal && Files.isSymbolicLink(target)) {
      try {
        target = target.toRealPath();
      } catch (NoSuchFileException e) {
        // A dangling link: say whether it points inside, and never create its target.
        return Brokered.refused(pointsInside(target, root) ? Errno.NOENT : Errno.NOTCAPABLE);
      } catch (IOException e) {
        return Brokered.refused(ioErrno(e));
      }
      if (!target.startsWith(root)) {
        return Brokered.refused(Errno.NOTCAPABLE);
      }
    }
    String real = at.outer(root.relativize(target).toString());
    if (preopenOf(real) != at) {
      // Really beneath this directory, but a mount shadows that name: two paths for one file.
      return Brokered.refused(Errno.NOTCAPABLE);
    }
    return new Brokered(Errno.SUCCESS, real, target, false, at);
  }

  private static boolean pointsInside(Path link, Path root) {
    try {
      return link.getParent().resolve(Files.readSymbolicLink(link)).normalize().startsWith(root);
    } catch (IOException e) {
      return false;
    }
  }

  private static int ioErrno(IOException e) {
    String reason = e instanceof FileSystemException f ? f.getReason() : null;
    if (reason != null && reason.contains("symbolic links")) {
      return Errno.LOOP;
    }
    if (reason != null && reason.contains("Not a directory")) {
      return Errno.NOTDIR;
    }
    return Errno.IO;
  }

  synchronized Opened opened(int fd) {
    return open.get(fd);
  }

  synchronized void opened(int fd, Opened o) {
    open.put(fd, o);
  }

  synchronized void closed(int fd) {
    open.remove(fd);
  }

  synchronized void renumbered(int from, int to) {
    Opened o = open.remove(from);
    if (o != null) {
      open.put(to, o);
    }
  }

  /**
   * The entries of directory {@code dir} the grant lets the guest see (some mode covers the entry's
   * path), sorted by name so listings are deterministic; `.` and `..` are left out.
   */
  List<Entry> listing(Opened dir) throws IOException {
    Path host = host(dir.rel());
    List<Entry> out = new ArrayList<>();
    List<Path> children;
    try (Stream<Path> s = Files.list(host)) {
      children = s.sorted().toList();
    }
    for (Path child : children) {
      String name = child.getFileName().toString();
      String rel = dir.rel().isEmpty() ? name : dir.rel() + "/" + name;
      if (!visible(rel)) {
        continue;
      }
      BasicFileAttributes a;
      try {
        a = Files.readAttributes(child, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      } catch (NoSuchFileException e) {
        continue;
      }
      byte type =
          a.isSymbolicLink()
              ? TYPE_SYMLINK
              : a.isDirectory() ? TYPE_DIRECTORY : a.isRegularFile() ? TYPE_REGULAR : TYPE_UNKNOWN;
      out.add(new Entry(name, type, inode(child)));
    }
    return out;
  }

  private static long inode(Path p) {
    try {
      Object ino = Files.getAttribute(p, "unix:ino", LinkOption.NOFOLLOW_LINKS);
      return ino instanceof Number n ? n.longValue() : 0;
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      return 0;
    }
  }
}
