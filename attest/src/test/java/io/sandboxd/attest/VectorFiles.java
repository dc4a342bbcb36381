package io.sandboxd.attest;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** Finds the external test vectors checked in under vectors/ at the repository root. */
final class VectorFiles {
  private VectorFiles() {}

  /**
   * vectors/{@code relative}: under the surefire property {@code sandboxd.root} when Maven runs us,
   * else beside the module directory (an IDE's working directory).
   */
  static Path dir(String relative) {
    String root = System.getProperty("sandboxd.root");
    Path base = root != null && !root.isBlank() ? Paths.get(root) : Paths.get("..");
    Path dir = base.resolve("vectors").resolve(relative).toAbsolutePath().normalize();
    if (!Files.isDirectory(dir)) {
      throw new IllegalStateException("no test vectors at " + dir + " (set -Dsandboxd.root)");
    }
    return dir;
  }

  /** Every regular file under {@code dir} whose name ends in {@code suffix}, in a stable order. */
  static List<Path> files(Path dir, String suffix) {
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile)
          .filter(f -> f.getFileName().toString().endsWith(suffix))
          .sorted()
          .collect(Collectors.toList());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static byte[] read(Path file) {
    try {
      return Files.readAllBytes(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
