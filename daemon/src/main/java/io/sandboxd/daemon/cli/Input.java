package io.sandboxd.daemon.cli;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads a command's input: a file, or standard input for {@code -} or no argument. */
final class Input {
  private Input() {}

  static byte[] read(String fileOrDash) throws IOException {
    if (fileOrDash == null || fileOrDash.equals("-")) {
      InputStream in = System.in;
      return in.readAllBytes();
    }
    return Files.readAllBytes(Path.of(fileOrDash));
  }

  static String name(String fileOrDash) {
    return fileOrDash == null || fileOrDash.equals("-") ? "<stdin>" : fileOrDash;
  }
}
