package io.sandboxd.executor;

import io.sandboxd.enforcer.StoragePath;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A unit's storage directory on the host. Guest paths are resolved beneath it one segment at a time
 * without following symlinks, so `..`, absolute paths and planted links cannot leave it, whatever
 * the globs say. (openat2 with RESOLVE_BENEATH would do this in the kernel; the JDK has no binding
 * for it, so we refuse every symlink on the way instead.)
 */
public final class StorageRoot {
  private final Path root;

  public StorageRoot(Path root) throws IOException {
    Files.createDirectories(root);
    this.root = root.toRealPath();
  }

  public Path root() {
    return root;
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
}
