package io.sandboxd.attest;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** Finds the external test vectors under shared/ (read-only, outside the repository). */
final class SharedVectors {
  private SharedVectors() {}

  /** shared/: the surefire property when Maven runs us, else ../../shared from the module dir. */
  static Path root() {
    String prop = System.getProperty("sandboxd.shared");
    Path p = prop != null && !prop.isBlank() ? Paths.get(prop) : Paths.get("../../shared");
    Path dir = p.toAbsolutePath().normalize();
    if (!Files.isDirectory(dir.resolve("vectors"))) {
      throw new IllegalStateException("no vectors/ under " + dir + " (set -Dsandboxd.shared)");
    }
    return dir;
  }

  static Path dir(String relative) {
    return root().resolve("vectors").resolve(relative);
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
