package io.sandboxd.daemon.cli;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads a command's input: a file, or standard input for {@code -} or no argument. */
final class Input {
  private Input() {}

  /**
   * A file a daemon command was given could not be read: {@link DaemonSocket#call} prints {@code
   * sandboxctl COMMAND: cannot read ...} and exits {@link Sandboxctl#UNUSABLE}.
   */
  static final class Unreadable extends Exception {
    private static final long serialVersionUID = 1L;

    Unreadable(IOException cause) {
      super("cannot read " + cause.getMessage(), cause);
    }
  }

  static byte[] read(String fileOrDash) throws IOException {
    if (fileOrDash == null || fileOrDash.equals("-")) {
      InputStream in = System.in;
      return in.readAllBytes();
    }
    return Files.readAllBytes(Path.of(fileOrDash));
  }

  /** {@link #read} for a command that calls the daemon. */
  static byte[] given(String fileOrDash) throws Unreadable {
    try {
      return read(fileOrDash);
    } catch (IOException e) {
      throw new Unreadable(e);
    }
  }

  /** The bytes of {@code file}, for a command that calls the daemon. */
  static byte[] bytes(Path file) throws Unreadable {
    try {
      return Files.readAllBytes(file);
    } catch (IOException e) {
      throw new Unreadable(e);
    }
  }

  /** The UTF-8 text of {@code file}, for a command that calls the daemon. */
  static String text(Path file) throws Unreadable {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new Unreadable(e);
    }
  }

  static String name(String fileOrDash) {
    return fileOrDash == null || fileOrDash.equals("-") ? "<stdin>" : fileOrDash;
  }
}
