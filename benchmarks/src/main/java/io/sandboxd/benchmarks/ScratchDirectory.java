package io.sandboxd.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** A benchmark's scratch directory on disk, removed with all it holds at tear-down. */
final class ScratchDirectory {
  private ScratchDirectory() {}

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
