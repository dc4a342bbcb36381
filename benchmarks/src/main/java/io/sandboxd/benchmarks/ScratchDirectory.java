package io.sandboxd.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** A benchmark's scratch directory on disk, removed with all it holds at tear-down. */
final class ScratchDirectory {
  private ScratchDirectory() {}

  /**
   * A new directory under {@code target/} (the working directory's disk, not a tmpfs, so fsync is
   * real), named from {@code prefix}.
   */
  static Path underTarget(String prefix) throws IOException {
    Files.createDirectories(Path.of("target"));
    return Files.createTempDirectory(Path.of("target"), prefix);
  }

  /** Deletes {@code dir} and everything below it, deepest first; nothing to do once it is gone. */
  static void delete(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
