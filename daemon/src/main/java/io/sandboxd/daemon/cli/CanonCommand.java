package io.sandboxd.daemon.cli;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import java.io.IOException;
import java.io.PrintStream;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** `sandboxctl canon`: prints the RFC 8785 bytes of a JSON document, without a trailing newline. */
@Command(name = "canon", description = "Print the RFC 8785 canonical bytes of a JSON document.")
final class CanonCommand implements Callable<Integer> {
  @Parameters(arity = "0..1", paramLabel = "FILE|-", description = "JSON input (default: stdin).")
  String file;

  @Override
  public Integer call() {
    try {
      byte[] canonical = CanonicalJson.canonicalize(Input.read(file));
      PrintStream out = System.out;
      out.write(canonical);
      out.flush();
      return 0;
    } catch (AttestException | IOException e) {
      return Sandboxctl.unusable("canon", Input.name(file) + ": " + e.getMessage());
    }
  }
}
