package io.sandboxd.daemon.cli;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Runs {@code sandboxctl} in this JVM with System.in/out/err swapped for buffers, since the
 * commands write to the standard streams directly.
 */
final class Console {
  private Console() {}

  /** What one invocation left behind. */
  record Result(int exit, byte[] stdout, String stderr) {
    String out() {
      return new String(stdout, StandardCharsets.UTF_8);
    }
  }

  static Result run(String... args) {
    return runWithStdin(new byte[0], args);
  }

  static synchronized Result runWithStdin(byte[] stdin, String... args) {
    PrintStream oldOut = System.out;
    PrintStream oldErr = System.err;
    InputStream oldIn = System.in;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
        PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
      System.setOut(o);
      System.setErr(e);
      System.setIn(new ByteArrayInputStream(stdin));
      int exit = Sandboxctl.commandLine().execute(args);
      o.flush();
      e.flush();
      return new Result(exit, out.toByteArray(), err.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(oldOut);
      System.setErr(oldErr);
      System.setIn(oldIn);
    }
  }
}
