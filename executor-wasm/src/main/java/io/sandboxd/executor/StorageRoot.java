package io.sandboxd.executor;

import io.sandboxd.enforcer.StoragePath;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A unit's storage directory on the host. Guest paths are resolved beneath it one segment at a time
 * without following symlinks, so `..`, absolute paths and planted links cannot leave it, whatever
 * the globs say. (openat2 with RESOLVE_BENEATH would do this in the kernel; the JDK has no binding
 * for it, so we refuse every symlink on the way instead.) Its bytes count against the module's node
 * quota through a {@link StorageLedger} shared by every run of the module.
 */
public final class StorageRoot implements AutoCloseable {
  private final Path root;
  private final StorageLedger ledger;

  private StorageRoot(Path root, StorageLedger ledger) {
    this.root = root;
    this.ledger = ledger;
  }

  /** A root with no quota (tests, tools). */
  public StorageRoot(Path root) throws IOException {
    this(real(root), null);
  }

  /**
   * A live root whose bytes count against {@code quotaBytes} and never take {@code disk}'s reserve;
   * close it when the run ends.
   */
  public static StorageRoot open(Path root, long quotaBytes, DiskReserve disk) throws IOException {
    Path real = real(root);
    return new StorageRoot(real, StorageLedger.acquire(real, quotaBytes, disk));
  }

  /**
   * The root of a replay: every storage input comes from the journal, so nothing here is created,
   * read or written; the path only names what the record named.
   */
  public static StorageRoot forReplay(Path root) {
    return new StorageRoot(root.toAbsolutePath().normalize(), StorageLedger.NONE);
  }

  private static Path real(Path root) throws IOException {
    // Checked first: createDirectories on a directory that exists throws and catches an exception
    // inside the JDK, and its stack trace cost more than the rest of opening a root for every run.
    if (!Files.isDirectory(root)) {
      Files.createDirectories(root);
    }
    return root.toRealPath();
  }

  public Path root() {
    return root;
  }

  /** The quota ledger of this root's module (unbounded when the root was made without a quota). */
  StorageLedger ledger() {
    return ledger == null ? StorageLedger.NONE : ledger;
  }

  /**
   * The host path of a normalized guest path, or empty when it would escape (a symlink on the way,
   * or an absolute path).
   */
  public Optional<Path> resolve(StoragePath path) {
    if (path.absolute()) {
      return Optional.empty();
    }
    Path p = root;
    for (String seg : path.segments()) {
      p = p.resolve(seg);
      if (Files.isSymbolicLink(p)) {
        return Optional.empty();
      }
    }
    if (!p.normalize().startsWith(root)) {
      return Optional.empty();
    }
    return Optional.of(p);
  }

  /** True when {@code file} is a regular file with more than one name (a hard link). */
  static boolean multiplyLinked(Path file) {
    try {
      Object n = Files.getAttribute(file, "unix:nlink", LinkOption.NOFOLLOW_LINKS);
      BasicFileAttributes a =
          Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      return !a.isDirectory() && n instanceof Number k && k.intValue() > 1;
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      return false;
    }
  }

  /** What one entry costs against the quota: a block, plus a regular file's apparent size. */
  static long cost(Path p) {
    try {
      BasicFileAttributes a =
          Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      return StorageLedger.ENTRY_BYTES + (a.isRegularFile() ? a.size() : 0);
    } catch (IOException e) {
      return 0;
    }
  }

  /** The apparent size of a regular file, 0 when there is none. */
  static long size(Path p) {
    try {
      BasicFileAttributes a =
          Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      return a.isRegularFile() ? a.size() : 0;
    } catch (IOException e) {
      return 0;
    }
  }

  /** The summed cost of everything beneath {@code dir} (not counting {@code dir} itself). */
  static long usage(Path dir) throws IOException {
    long total = 0;
    try (Stream<Path> walk = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) walk::iterator) {
        if (!p.equals(dir)) {
          total += cost(p);
        }
      }
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    return total;
  }

  @Override
  public void close() {
    if (ledger != null) {
      ledger.release();
    }
  }
}
