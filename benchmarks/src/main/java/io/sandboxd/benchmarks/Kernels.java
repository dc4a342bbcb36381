package io.sandboxd.benchmarks;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The CPU-bound C kernels of src/main/c (packed into the jar under {@code kernels/}), built on
 * first use with Debian's clang-16 for bare wasm32 (no libc, no imports, exports {@code run} and
 * {@code check}) into {@code target/kernels/}, next to the benchmarks jar. Only the benchmarks need
 * clang; the Maven build never runs it. {@code java -cp benchmarks.jar
 * io.sandboxd.benchmarks.Kernels} builds them all and prints their paths (run-v8-compare.sh feeds
 * the same files to Node).
 */
public final class Kernels {
  /** The kernels, by the name of their C source. */
  public static final List<String> NAMES = List.of("intmix", "nbody", "randwalk");

  private Kernels() {}

  public static void main(String[] args) {
    for (String name : NAMES) {
      build(name);
      System.out.println(wasmPath(name).toAbsolutePath());
    }
  }

  /** The module built from {@code <name>.c}, compiled now if target/kernels lacks it. */
  public static byte[] wasm(String name) {
    try {
      return Files.readAllBytes(build(name));
    } catch (IOException e) {
      throw new IllegalStateException("reading kernel " + name, e);
    }
  }

  /** Where the kernel's module lives (or will). */
  public static Path wasmPath(String name) {
    return outDir().resolve(name + ".wasm");
  }

  private static Path outDir() {
    String override = System.getProperty("sandboxd.kernels.dir");
    if (override != null) {
      return Path.of(override);
    }
    try {
      // benchmarks/target/benchmarks.jar or benchmarks/target/classes: either way, target/kernels.
      Path code =
          Path.of(Kernels.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      return code.getParent().resolve("kernels");
    } catch (URISyntaxException | RuntimeException e) {
      return Path.of("target", "kernels");
    }
  }

  private static synchronized Path build(String name) {
    Path out = wasmPath(name);
    try {
      byte[] source;
      try (InputStream in = Kernels.class.getResourceAsStream("/kernels/" + name + ".c")) {
        if (in == null) {
          throw new IllegalStateException(
              "no kernel source kernels/" + name + ".c on the classpath");
        }
        source = in.readAllBytes();
      }
      // Rebuild only when the source packed in this jar differs from the one last built.
      Path src = out.resolveSibling(name + ".c");
      if (Files.isRegularFile(out)
          && Files.isRegularFile(src)
          && java.util.Arrays.equals(Files.readAllBytes(src), source)) {
        return out;
      }
      Files.createDirectories(out.getParent());
      Files.write(src, source);
      Path tmp = out.resolveSibling(name + ".wasm.tmp");
      List<String> cmd =
          List.of(
              onPath("clang-16"),
              "--target=wasm32",
              "-O2",
              "-nostdlib",
              "-fuse-ld=" + onPath("wasm-ld-16"),
              "-Wl,--no-entry",
              src.toString(),
              "-o",
              tmp.toString());
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", cmd) + " failed:\n" + output);
      }
      Files.move(tmp, out, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      return out;
    } catch (IOException e) {
      throw new IllegalStateException("building kernel " + name, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while building kernel " + name, e);
    }
  }

  private static String onPath(String tool) {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      Path p = Path.of(dir, tool);
      if (Files.isExecutable(p)) {
        return p.toString();
      }
    }
    throw new IllegalStateException(
        tool + " is not on PATH: install clang-16 and lld-16 to build the benchmark kernels");
  }
}
