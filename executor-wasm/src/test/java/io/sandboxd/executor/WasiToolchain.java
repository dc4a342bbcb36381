package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Builds the C guests in src/test/c with Debian's clang-16 for wasm32-wasi. A missing toolchain
 * fails the test (CI installs it through .ci/run); it never skips.
 */
final class WasiToolchain {
  private static final Path SOURCES = Path.of("src", "test", "c");
  private static final Path OUT = Path.of("target", "wasi-guests");

  private WasiToolchain() {}

  /** The module built from {@code src/test/c/<name>.c}. */
  static byte[] build(String name) {
    String clang = onPath("clang-16");
    String lld = onPath("wasm-ld-16");
    try {
      Files.createDirectories(OUT);
      Path out = OUT.resolve(name + ".wasm");
      Process p =
          new ProcessBuilder(
                  List.of(
                      clang,
                      "--target=wasm32-wasi",
                      "-O2",
                      "-fuse-ld=" + lld,
                      SOURCES.resolve(name + ".c").toString(),
                      "-o",
                      out.toString()))
              .redirectErrorStream(true)
              .start();
      String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        fail("clang-16 could not build " + name + ".c:\n" + output);
      }
      return Files.readAllBytes(out);
    } catch (IOException e) {
      throw new AssertionError("building " + name + ".c", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while building " + name + ".c", e);
    }
  }

  private static String onPath(String tool) {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      Path p = Path.of(dir, tool);
      if (Files.isExecutable(p)) {
        return p.toString();
      }
    }
    return fail(
        tool
            + " is not on PATH: install clang-16 lld-16 wasi-libc libclang-rt-16-dev-wasm32"
            + " (.ci/run does)");
  }
}
