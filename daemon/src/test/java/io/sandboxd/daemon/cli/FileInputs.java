package io.sandboxd.daemon.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** What a test of commands that read the files they are given stands on: a fresh directory. */
abstract class FileInputs {
  @TempDir Path tmp;

  /** Writes {@code text} (UTF-8) to {@code name} in the test's directory. */
  Path write(String name, String text) throws IOException {
    return Files.writeString(tmp.resolve(name), text, StandardCharsets.UTF_8);
  }
}
