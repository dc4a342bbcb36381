package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * bin/conformance (docs/CONFORMANCE.md) passes on the project's own {@code sandboxctl verify} (its
 * main class in a JVM of its own, as bin/sandboxctl starts it), and fails a verifier that calls
 * everything valid, so a pass means something.
 */
class ConformanceRunnerTest {
  private static final Path ROOT = InteropVectorsTest.root();

  private record Result(int exit, String output) {}

  private static Result run(List<String> verifier) throws IOException, InterruptedException {
    List<String> command =
        new ArrayList<>(List.of("bash", ROOT.resolve("bin/conformance").toString()));
    // Cases are independent: as many at once as there are cores (output stays in case order).
    command.addAll(
        List.of("--jobs", String.valueOf(Math.max(1, Runtime.getRuntime().availableProcessors()))));
    command.add("--");
    command.addAll(verifier);
    Path log = Files.createTempFile("conformance", ".log");
    try {
      Process p =
          new ProcessBuilder(command)
              .directory(ROOT.toFile())
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      assertTrue(p.waitFor(15, TimeUnit.MINUTES), "bin/conformance did not finish");
      return new Result(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(log);
    }
  }

  private static int caseCount() throws IOException {
    return (int)
        Files.readAllLines(ROOT.resolve("vectors/records/cases.tsv")).stream()
            .filter(l -> !l.isBlank() && !l.startsWith("#"))
            .count();
  }

  @Test
  void sandboxctlVerifyGivesEveryCaseItsVerdict() throws Exception {
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    Result r =
        run(
            List.of(
                java,
                "-XX:TieredStopAtLevel=1",
                "-Xshare:auto",
                "-cp",
                System.getProperty("java.class.path"),
                "io.sandboxd.daemon.cli.Sandboxctl",
                "verify"));
    int n = caseCount();
    assertTrue(n >= 80, "only " + n + " cases");
    assertEquals(0, r.exit(), r.output());
    assertTrue(r.output().contains(n + " passed, 0 failed, of " + n), r.output());
  }

  @Test
  void aVerifierThatCallsEverythingValidFails() throws Exception {
    Result r = run(List.of("sh", "-c", "echo valid; echo signer \"$2\"", "always-valid"));
    assertEquals(1, r.exit(), r.output());
    assertTrue(r.output().contains("FAIL receipt-other-signer"), r.output());
    assertTrue(r.output().contains("FAIL log-proof-no-signer"), r.output());
  }
}
