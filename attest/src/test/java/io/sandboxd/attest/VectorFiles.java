package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** Finds the external test vectors checked in under vectors/ at the repository root. */
public final class VectorFiles {
  private VectorFiles() {}

  /**
   * vectors/{@code relative}, which need not exist yet: under the surefire property {@code
   * sandboxd.root} when Maven runs us, else beside the module directory (an IDE's working
   * directory).
   */
  public static Path path(String relative) {
    String root = System.getProperty("sandboxd.root");
    Path base = root != null && !root.isBlank() ? Paths.get(root) : Paths.get("..");
    return base.resolve("vectors").resolve(relative).toAbsolutePath().normalize();
  }

  /** The directory vectors/{@code relative}, which must exist. */
  static Path dir(String relative) {
    Path dir = path(relative);
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

  /** A generated vectors file's text: {@code root} pretty-printed, ending in a newline. */
  public static String text(JsonNode root) {
    try {
      return CanonicalJson.mapper().writerWithDefaultPrettyPrinter().writeValueAsString(root)
          + "\n";
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A generator's {@code main}: writes {@code generated} to {@code args[0]}, or to {@code fallback}
   * without one, and prints where.
   */
  public static void write(String[] args, String fallback, String generated) throws IOException {
    Path out = Path.of(args.length > 0 ? args[0] : fallback);
    Files.createDirectories(out.toAbsolutePath().getParent());
    Files.writeString(out, generated, StandardCharsets.UTF_8);
    System.out.println(out);
  }

  /**
   * Asserts that {@code file} holds {@code generated} byte for byte; with {@code
   * -Dsandboxd.vectors.write=true} the file is rewritten first, so a deliberate change to a
   * generator is one run and a reviewed diff.
   */
  public static void assertGenerated(Path file, String generated) throws IOException {
    if (Boolean.getBoolean("sandboxd.vectors.write")) {
      Files.createDirectories(file.getParent());
      Files.writeString(file, generated, StandardCharsets.UTF_8);
    }
    assertTrue(Files.isRegularFile(file), "missing " + file);
    assertEquals(
        generated,
        Files.readString(file, StandardCharsets.UTF_8),
        file + " is stale: rerun this test with -Dsandboxd.vectors.write=true and review the diff");
  }
}
