package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import picocli.CommandLine.Option;

/**
 * How a command prints JSON (one canonical line: keys sorted, as every {@code --json} output is),
 * and the plain {@code --json} option of a command whose JSON says what its text says.
 */
final class JsonOutput {
  @Option(names = "--json", description = "Print JSON instead of text.")
  boolean on;

  /** {@code node} as one canonical JSON line on stdout. */
  static void print(JsonNode node) {
    System.out.println(CanonicalJson.canonicalString(node));
  }
}
