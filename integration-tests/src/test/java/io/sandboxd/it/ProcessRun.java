package io.sandboxd.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A command run to its end (at most 5 minutes): its exit status and its stdout and stderr merged.
 */
record ProcessRun(int exit, String output) {
  /** Runs {@code command} with {@code env} added, its output kept in a file under {@code dir}. */
  static ProcessRun of(Path dir, Map<String, String> env, List<String> command)
      throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.environment().putAll(env);
    pb.redirectErrorStream(true);
    Path out = Files.createTempFile(dir, "out", ".log");
    pb.redirectOutput(out.toFile());
    Process p = pb.start();
    p.getOutputStream().close();
    if (!p.waitFor(5, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new AssertionError(String.join(" ", command) + ": did not finish in 5 minutes");
    }
    return new ProcessRun(p.exitValue(), Files.readString(out));
  }
}
