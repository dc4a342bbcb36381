package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The SQLite shell for wasm32-wasi, a real C program of about 1.7 MB, as the repository's {@code
 * bin/sqlite-wasm} builds it: fetched and checked against its pinned SHA-256, compiled with
 * clang-16 and cached by content (a second call costs nothing). A failed fetch or build fails the
 * test; it never skips.
 */
public final class SqliteShellBuild {
  private static byte[] cached;

  private SqliteShellBuild() {}

  /** The module's bytes. */
  public static synchronized byte[] wasm() {
    if (cached == null) {
      try {
        cached = Files.readAllBytes(path());
      } catch (IOException e) {
        throw new AssertionError("reading the SQLite shell module", e);
      }
    }
    return cached.clone();
  }

  /** The cached module's path, built first when it is not there. */
  public static Path path() {
    Path script = script();
    try {
      Process p =
          new ProcessBuilder(List.of(script.toString()))
              .redirectError(ProcessBuilder.Redirect.INHERIT)
              .start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      if (!p.waitFor(15, TimeUnit.MINUTES) || p.exitValue() != 0) {
        p.destroyForcibly();
        return fail(script + " failed (exit " + p.exitValue() + "); see its messages above");
      }
      Path wasm = Path.of(out);
      if (!Files.isRegularFile(wasm)) {
        return fail(script + " printed " + out + ", which is not a file");
      }
      return wasm;
    } catch (IOException e) {
      throw new AssertionError("running " + script, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while building the SQLite shell", e);
    }
  }

  /** {@code bin/sqlite-wasm} of this checkout, found from the module's directory upwards. */
  private static Path script() {
    for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
      Path s = d.resolve("bin").resolve("sqlite-wasm");
      if (Files.isExecutable(s)) {
        return s;
      }
    }
    return fail("bin/sqlite-wasm not found above " + Path.of("").toAbsolutePath());
  }
}
