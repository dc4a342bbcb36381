package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Builds the C guests in src/test/c with Debian's clang-16 for wasm32-wasi. A missing toolchain
 * fails the test (CI installs it through .ci/run); it never skips.
 */
public final class WasiToolchain {
  private static final Path SOURCES = Path.of("src", "test", "c");
  private static final Path OUT = Path.of("target", "wasi-guests");

  private WasiToolchain() {}

  /** The module built from {@code src/test/c/<name>.c}. */
  static byte[] build(String name) {
    try {
      Files.createDirectories(OUT);
      Path out = OUT.resolve(name + ".wasm");
      compile(out, SOURCES.resolve(name + ".c").toString());
      return Files.readAllBytes(out);
    } catch (IOException e) {
      throw new AssertionError("building " + name + ".c", e);
    }
  }

  /**
   * Builds the module {@code out} from {@code sources} (C files, and -D flags before them); a
   * failed build fails the test with clang's output.
   */
  public static void compile(Path out, String... sources) {
    String clang = onPath("clang-16");
    String lld = onPath("wasm-ld-16");
    List<String> cmd = new ArrayList<>(List.of(clang, "--target=wasm32-wasi", "-O2"));
    cmd.add("-fuse-ld=" + lld);
    cmd.addAll(List.of(sources));
    cmd.addAll(List.of("-o", out.toString()));
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        fail("clang-16 could not build " + List.of(sources) + ":\n" + output);
      }
    } catch (IOException e) {
      throw new AssertionError("building " + List.of(sources), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while building " + List.of(sources), e);
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
