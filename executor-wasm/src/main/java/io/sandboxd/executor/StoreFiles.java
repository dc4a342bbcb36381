package io.sandboxd.executor;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;

/**
 * The disk steps {@link ModuleStore} and {@link SnapshotStore} share: a private directory, the
 * temporaries a crash leaves in it (whole writes and durable renames: {@link
 * io.sandboxd.attest.PrivateFile}).
 */
final class StoreFiles {
  /** How a file being written is named until its rename: one left at open was cut by a crash. */
  static final String TMP_PREFIX = ".incoming-";

  private StoreFiles() {}

  /** Creates {@code d} (mode 0700, with its parents) unless it is a directory already. */
  static void createPrivateDir(Path d) throws IOException {
    if (!Files.isDirectory(d)) {
      Files.createDirectories(
          d, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    }
  }

  /**
   * Creates {@code d} as {@link #createPrivateDir} does and deletes the temporaries a crash left in
   * it; returns its other entries, in the directory's order.
   */
  static List<Path> openSwept(Path d) throws IOException {
    createPrivateDir(d);
    List<Path> kept = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(d)) {
      for (Path f : files) {
        if (f.getFileName().toString().startsWith(TMP_PREFIX)) {
          Files.deleteIfExists(f);
        } else {
          kept.add(f);
        }
      }
    }
    return kept;
  }
}
