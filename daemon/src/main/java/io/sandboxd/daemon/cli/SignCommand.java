package io.sandboxd.daemon.cli;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.KeyFile;
import io.sandboxd.attest.SigningKey;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** `sandboxctl sign`: wraps a document as the core of a signed envelope. */
@Command(name = "sign", description = "Print the signed envelope of DOC as its core.")
final class SignCommand implements Callable<Integer> {
  @Option(names = "--key", required = true, paramLabel = "FILE", description = "Private key file.")
  Path key;

  @Parameters(arity = "0..1", paramLabel = "DOC", description = "JSON object (default: stdin).")
  String doc;

  @Override
  public Integer call() {
    try {
      SigningKey k = KeyFile.read(key);
      var core = CanonicalJson.parse(Input.read(doc));
      if (!core.isObject()) {
        throw new AttestException("a core must be a JSON object");
      }
      System.out.println(Envelope.sign(core, k).toJsonLine());
      return 0;
    } catch (AttestException | IOException e) {
      return Sandboxctl.unusable("sign", e.getMessage());
    }
  }
}
